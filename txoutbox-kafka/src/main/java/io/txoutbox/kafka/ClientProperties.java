package io.txoutbox.kafka;

import io.txoutbox.ConfigDescriptor;
import java.util.Map;
import java.util.Properties;
import java.util.function.BiConsumer;
import java.util.function.BiFunction;
import java.util.stream.Collectors;

/**
 * What {@link KafkaTransport} and {@link KafkaInboxConsumer} share about Kafka client properties: the bulk forms of a
 * builder's {@code property(key, value)}, the security settings both descriptors offer, and the one way to show
 * client properties in a log line with their secrets hidden.
 */
final class ClientProperties {

    private ClientProperties() {
    }

    /** A builder's {@code property(key, value)}. */
    @FunctionalInterface
    interface Setter<B> {
        void set(B builder, String key, Object value);
    }

    /** Each entry of {@code from}, as {@code property(key, value)} one by one. */
    static void copy(Map<String, ?> from, BiConsumer<String, Object> property) {
        from.forEach(property);
    }

    /** Each of {@code from}'s string properties (defaults included), as {@code property(key, value)} one by one. */
    static void copy(Properties from, BiConsumer<String, Object> property) {
        for (String key : from.stringPropertyNames()) {
            property.accept(key, from.getProperty(key));
        }
    }

    /**
     * Adds the TLS and SASL settings ({@code security-protocol}, {@code sasl-jaas-config}, ...) as views of the Kafka
     * client properties: {@code property} sets one on the builder, {@code text} reads one from the record. The
     * passwords and the JAAS configuration are secrets: never logged.
     */
    static <B, C> ConfigDescriptor.Definition<B, C> addSecuritySettings(ConfigDescriptor.Definition<B, C> d,
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
    static String text(Map<String, Object> properties, String key) {
        Object v = properties.get(key);
        return v == null ? null
                : v instanceof org.apache.kafka.common.config.types.Password p ? p.value() : String.valueOf(v);
    }

    /**
     * Client properties for logs and toString(): sorted, each secret ({@link KafkaTransportConfig#isSecret}) replaced
     * by {@value KafkaTransportConfig#HIDDEN}.
     */
    static String describe(Map<String, Object> properties) {
        return properties.entrySet().stream()
                .sorted(Map.Entry.comparingByKey())
                .map(e -> e.getKey() + "=" + (KafkaTransportConfig.isSecret(e.getKey()) ? KafkaTransportConfig.HIDDEN
                        : String.valueOf(e.getValue())))
                .collect(Collectors.joining(", ", "{", "}"));
    }
}
