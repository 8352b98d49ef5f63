package io.txoutbox.kafka.internal;

import io.txoutbox.InvalidConfigurationException;
import io.txoutbox.internal.config.DescriptorBuilder;
import io.txoutbox.kafka.KafkaInboxConsumer;
import io.txoutbox.kafka.KafkaTransport;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.BiConsumer;
import java.util.function.BiFunction;
import java.util.stream.Collectors;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.config.ConfigDef;

/**
 * What {@link KafkaTransport} and {@link KafkaInboxConsumer} share about Kafka client properties: the bulk forms of a
 * builder's {@code property(key, value)}, the security settings both descriptors offer, and the one way to show
 * client properties in a log line with their secrets hidden. Public for the two config records only.
 */
public final class ClientProperties {

    /**
     * Every property the Kafka clients themselves type {@code PASSWORD} (producer, consumer, admin client): read from
     * their {@code ConfigDef}s, so a secret property added by a later kafka-clients is hidden without a change here.
     */
    static final Set<String> PASSWORD_TYPED = passwordTyped();

    /**
     * Substrings of property names whose values are hidden too: for properties Kafka does not know (a custom login
     * module's or callback handler's settings), whose type nobody declared.
     */
    static final List<String> SECRET_MARKERS = List.of("password", "passphrase", "secret", "jaas", "ssl.key",
            "token", "credential", "private", "certificate", "apikey", "api.key");
    static final String HIDDEN = "[hidden]";

    private ClientProperties() {
    }

    /** A builder's {@code property(key, value)}. */
    @FunctionalInterface
    public interface Setter<B> {
        void set(B builder, String key, Object value);
    }

    /** Each entry of {@code from}, as {@code property(key, value)} one by one. */
    public static void copy(Map<String, ?> from, BiConsumer<String, Object> property) {
        from.forEach(property);
    }

    /** Each of {@code from}'s string properties (defaults included), as {@code property(key, value)} one by one. */
    public static void copy(Properties from, BiConsumer<String, Object> property) {
        for (String key : from.stringPropertyNames()) {
            property.accept(key, from.getProperty(key));
        }
    }

    /**
     * Adds the TLS and SASL settings ({@code security-protocol}, {@code sasl-jaas-config}, ...) as views of the Kafka
     * client properties: {@code property} sets one on the builder, {@code text} reads one from the record. The
     * passwords and the JAAS configuration are secrets: never logged.
     */
    public static <B, C> DescriptorBuilder<B, C> addSecuritySettings(DescriptorBuilder<B, C> d,
            Setter<B> property, BiFunction<C, String, String> text) {
        return d.add("securityProtocol", String.class, null, "",
                        "Kafka's security.protocol: PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL",
                        (b, v) -> property.set(b, "security.protocol", v), c -> text.apply(c, "security.protocol"))
                .add("saslMechanism", String.class, null, "", "Kafka's sasl.mechanism: PLAIN, SCRAM-SHA-512, ...",
                        (b, v) -> property.set(b, "sasl.mechanism", v), c -> text.apply(c, "sasl.mechanism"))
                .addSecret("saslJaasConfig", String.class, "Kafka's sasl.jaas.config (secret: never logged)",
                        (b, v) -> property.set(b, "sasl.jaas.config", v), c -> text.apply(c, "sasl.jaas.config"))
                .add("sslTruststoreLocation", String.class, null, "", "Kafka's ssl.truststore.location",
                        (b, v) -> property.set(b, "ssl.truststore.location", v),
                        c -> text.apply(c, "ssl.truststore.location"))
                .addSecret("sslTruststorePassword", String.class, "Kafka's ssl.truststore.password",
                        (b, v) -> property.set(b, "ssl.truststore.password", v),
                        c -> text.apply(c, "ssl.truststore.password"))
                .add("sslKeystoreLocation", String.class, null, "", "Kafka's ssl.keystore.location",
                        (b, v) -> property.set(b, "ssl.keystore.location", v),
                        c -> text.apply(c, "ssl.keystore.location"))
                .addSecret("sslKeystorePassword", String.class, "Kafka's ssl.keystore.password",
                        (b, v) -> property.set(b, "ssl.keystore.password", v),
                        c -> text.apply(c, "ssl.keystore.password"))
                .addSecret("sslKeyPassword", String.class, "Kafka's ssl.key.password",
                        (b, v) -> property.set(b, "ssl.key.password", v), c -> text.apply(c, "ssl.key.password"));
    }

    /** A client property as text; {@code null} when unset (a {@code Password} gives its value). */
    public static String text(Map<String, Object> properties, String key) {
        Object v = properties.get(key);
        return v == null ? null
                : v instanceof org.apache.kafka.common.config.types.Password p ? p.value() : String.valueOf(v);
    }

    /**
     * Client properties for logs and toString(): sorted, each secret ({@link #isSecret}) replaced by
     * {@value #HIDDEN}.
     */
    public static String describe(Map<String, Object> properties) {
        return properties.entrySet().stream()
                .sorted(Map.Entry.comparingByKey())
                .map(e -> e.getKey() + "=" + (isSecret(e.getKey()) ? HIDDEN
                        : String.valueOf(e.getValue())))
                .collect(Collectors.joining(", ", "{", "}"));
    }

    /** Whether a property's value must never be shown: Kafka types it PASSWORD, or its name looks secret. */
    public static boolean isSecret(String key) {
        String lower = key.toLowerCase(Locale.ROOT);
        return PASSWORD_TYPED.contains(lower) || SECRET_MARKERS.stream().anyMatch(lower::contains);
    }

    /** A whole-number client property (a {@code Number} or its text); anything else fails naming the property. */
    public static long number(String key, Object value) {
        if (value instanceof Number n) {
            return n.longValue();
        }
        try {
            return Long.parseLong(String.valueOf(value).trim());
        } catch (NumberFormatException e) {
            throw new InvalidConfigurationException("Kafka property '" + key + "' must be a whole number, was '"
                    + value + "'");
        }
    }

    private static Set<String> passwordTyped() {
        Set<String> names = new TreeSet<>();
        for (ConfigDef def : List.of(ProducerConfig.configDef(), ConsumerConfig.configDef(),
                AdminClientConfig.configDef())) {
            def.configKeys().values().stream().filter(k -> k.type == ConfigDef.Type.PASSWORD)
                    .forEach(k -> names.add(k.name.toLowerCase(Locale.ROOT)));
        }
        return Set.copyOf(names);
    }
}
