package io.txoutbox.kafka;

import static org.assertj.core.api.Assertions.assertThat;

import io.txoutbox.ConfigDescriptor;
import io.txoutbox.HealthConfig;
import io.txoutbox.InboxWorker;
import io.txoutbox.InboxWorkerConfig;
import io.txoutbox.Outbox;
import io.txoutbox.OutboxConfig;
import io.txoutbox.OutboxHealth;
import io.txoutbox.OutboxReplay;
import io.txoutbox.OutboxRetention;
import io.txoutbox.OutboxSchema;
import io.txoutbox.PollingRelay;
import io.txoutbox.RelayConfig;
import io.txoutbox.ReplayConfig;
import io.txoutbox.RetentionConfig;
import io.txoutbox.spi.Transport;
import io.txoutbox.testing.docs.GeneratedFile;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.lang.reflect.Proxy;
import java.time.Duration;
import java.time.Instant;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;

/**
 * {@code docs/configuration.md} is generated from every component's {@link ConfigDescriptor}: this test fails when
 * the committed file differs from what the descriptors say, and rewrites it with {@code -Dtxoutbox.docs.write=true}.
 * It also checks that each documented default is what a builder given no settings builds, and the record's
 * {@code DEFAULT_*} constant where there is one.
 */
class ConfigurationReferenceTest {

    static final String REGENERATE = "mvn -B -o -q verify -pl txoutbox-kafka -am -Dtest=ConfigurationReferenceTest "
            + "-Dit.test=NoSuchIT -Dsurefire.failIfNoSpecifiedTests=false -Dtxoutbox.docs.write=true";

    /** No connection is ever opened: the builders are built, never started. */
    private static final DataSource NO_DATABASE = (DataSource) Proxy.newProxyInstance(
            DataSource.class.getClassLoader(), new Class<?>[] {DataSource.class}, (p, m, a) -> {
                throw new UnsupportedOperationException("not used: nothing is started");
            });
    private static final Transport NO_TRANSPORT = (lane, batch) -> {
        throw new UnsupportedOperationException("not used: nothing is started");
    };

    /**
     * One section: its title, entry point, descriptor, the record built from an empty settings map and from the
     * plain builder, where the {@code DEFAULT_*} constants are, and the settings that are required (no default).
     */
    private record Component<C>(String title, String entry, ConfigDescriptor<?, C> descriptor, C fromSettings,
            C fromBuilder, List<Class<?>> constants, Set<String> required) {
    }

    private static List<Component<?>> components() {
        return List.of(
                new Component<>("Outbox schema", "OutboxSchema.builder()", OutboxSchema.DESCRIPTOR,
                        OutboxSchema.builder().settings(Map.of()).build(), OutboxSchema.builder().build(),
                        List.of(OutboxSchema.class), Set.of()),
                new Component<>("Outbox writer", "Outbox.builder()", OutboxConfig.DESCRIPTOR,
                        Outbox.builder().settings(Map.of()).build().config(), Outbox.builder().build().config(),
                        List.of(OutboxConfig.class), Set.of()),
                new Component<>("Polling relay", "PollingRelay.builder()", RelayConfig.DESCRIPTOR,
                        relay().settings(Map.of()).build().config(), relay().build().config(),
                        List.of(RelayConfig.class), Set.of()),
                new Component<>("Inbox worker", "InboxWorker.builder()", InboxWorkerConfig.DESCRIPTOR,
                        worker().settings(Map.of()).build().config(), worker().build().config(),
                        List.of(InboxWorkerConfig.class), Set.of("consumer")),
                new Component<>("Retention", "OutboxRetention.builder()", RetentionConfig.DESCRIPTOR,
                        retention().settings(Map.of()).build().config(), retention().build().config(),
                        List.of(RetentionConfig.class), Set.of()),
                new Component<>("Replay", "OutboxReplay.builder()", ReplayConfig.DESCRIPTOR,
                        replay().settings(Map.of()).build().config(), replay().build().config(),
                        List.of(ReplayConfig.class), Set.of("name")),
                new Component<>("Health", "OutboxHealth.builder()", HealthConfig.DESCRIPTOR,
                        health().settings(Map.of()).build().config(), health().build().config(),
                        List.of(HealthConfig.class), Set.of()),
                new Component<>("Kafka transport", "KafkaTransport.builder()", KafkaTransportConfig.DESCRIPTOR,
                        transport().settings(Map.of()).config(), transport().config(),
                        List.of(KafkaTransportConfig.class, KafkaTransport.class), Set.of("bootstrap-servers")),
                new Component<>("Kafka inbox consumer", "KafkaInboxConsumer.builder()",
                        KafkaInboxConsumerConfig.DESCRIPTOR, inboxConsumer().settings(Map.of()).config(),
                        inboxConsumer().config(), List.of(KafkaInboxConsumerConfig.class),
                        Set.of("bootstrap-servers", "group-id", "topics", "consumer")));
    }

    private static PollingRelay.Builder relay() {
        return PollingRelay.builder().dataSource(NO_DATABASE).transport(NO_TRANSPORT);
    }

    private static InboxWorker.Builder worker() {
        return InboxWorker.builder().dataSource(NO_DATABASE).consumer("billing").handler("T", (c, e) -> { });
    }

    private static OutboxRetention.Builder retention() {
        return OutboxRetention.builder().dataSource(NO_DATABASE);
    }

    private static OutboxReplay.Builder replay() {
        return OutboxReplay.builder().dataSource(NO_DATABASE).transport(NO_TRANSPORT).name("rebuild");
    }

    private static OutboxHealth.Builder health() {
        return OutboxHealth.builder().dataSource(NO_DATABASE);
    }

    private static KafkaTransport.Builder transport() {
        return KafkaTransport.builder().bootstrapServers("kafka:9092");
    }

    private static KafkaInboxConsumer.Builder inboxConsumer() {
        return KafkaInboxConsumer.builder().bootstrapServers("kafka:9092").groupId("billing").topics("orders");
    }

    @Test
    void theCommittedReferenceIsWhatTheDescriptorsSay() {
        GeneratedFile.check(GeneratedFile.inModule("../docs/configuration.md").normalize(), render(components()),
                REGENERATE);
    }

    @Test
    void everyDocumentedDefaultIsTheBuildersAndTheRecordsConstant() throws IllegalAccessException {
        for (Component<?> c : components()) {
            check(c);
        }
    }

    private static <C> void check(Component<C> c) throws IllegalAccessException {
        Map<String, Object> fromSettings = c.descriptor().values(c.fromSettings());
        assertThat(fromSettings).as("%s: an empty settings map changes nothing", c.title())
                .isEqualTo(c.descriptor().values(c.fromBuilder()));
        for (ConfigDescriptor.Setting s : c.descriptor().settings()) {
            if (c.required().contains(s.name())) {
                assertThat(s.defaultValue()).as("%s is required or derived: no default", s.property()).isNull();
                continue;
            }
            assertThat(fromSettings.get(s.name())).as("%s: the builder's default (%s)", s.property(), REGENERATE)
                    .isEqualTo(s.defaultValue());
            String constant = "DEFAULT_" + s.name().replace('-', '_').toUpperCase(Locale.ROOT);
            for (Class<?> home : c.constants()) {
                Field f = constant(home, constant);
                if (f != null) {
                    assertThat(f.get(null)).as("%s.%s documents %s", home.getSimpleName(), constant, s.property())
                            .isEqualTo(s.defaultValue());
                }
            }
        }
    }

    private static Field constant(Class<?> home, String name) {
        try {
            Field f = home.getField(name);
            return Modifier.isStatic(f.getModifiers()) ? f : null;
        } catch (NoSuchFieldException e) {
            return null;
        }
    }


    static String render(List<Component<?>> components) {
        StringBuilder out = new StringBuilder();
        out.append("# Configuration reference\n\n")
                .append("<!-- Generated from the components' ConfigDescriptors by ConfigurationReferenceTest "
                        + "(txoutbox-kafka); do not edit. Regenerate with:\n     ").append(REGENERATE)
                .append(" -->\n\n")
                .append("Every setting has one name everywhere: the builder call (`batchSize(500)`), the property "
                        + "(`txoutbox.relay.batch-size`, for `settings(Map)`, the Spring Boot starter and the CLI) "
                        + "and the environment variable (`TXOUTBOX_RELAY_BATCH_SIZE`). Objects (a `DataSource`, a "
                        + "transport, handlers, listeners, a `Clock`) are builder calls only; so are arbitrary Kafka "
                        + "client properties (`property(key, value)`).\n\n")
                .append("Text forms: durations `500ms`, `5s`, `2m`, `1h`, `7d` (also `ns`, `us`) or ISO-8601 "
                        + "`PT5S`, a bare number is milliseconds, never negative; sizes `1048576`, `512KB`, `16MB`, "
                        + "`1GB` (powers of 1024, whole numbers; a bare number is bytes); booleans `true` / "
                        + "`false`; enums by name in any case (`-` for `_`); instants ISO-8601 "
                        + "(`2026-12-01T00:00:00Z`). Secret settings are never logged (`****`).\n");
        for (Component<?> c : components) {
            out.append("\n## ").append(c.title()).append(" (`").append(c.descriptor().prefix()).append(".*`)\n\n")
                    .append("Built by `").append(c.entry()).append("`.\n\n")
                    .append("| Property | Environment variable | Type | Default | Unit | Description |\n")
                    .append("|---|---|---|---|---|---|\n");
            for (ConfigDescriptor.Setting s : c.descriptor().settings()) {
                out.append("| `").append(s.property()).append("` | `").append(s.environmentVariable())
                        .append("` | ").append(type(s)).append(" | ")
                        .append(s.defaultValue() == null ? (c.required().contains(s.name()) ? "required" : "unset")
                                : "`" + s.defaultText() + "`")
                        .append(" | ").append(s.unit()).append(" | ").append(cell(s.doc())).append(" |\n");
            }
        }
        return out.toString();
    }

    private static final Map<Class<?>, String> TYPES = Map.of(String.class, "text", Integer.class, "integer",
            Long.class, "integer", Double.class, "number", Boolean.class, "boolean", Duration.class, "duration",
            Instant.class, "instant");

    private static String type(ConfigDescriptor.Setting s) {
        String type = "bytes".equals(s.unit()) ? "size" : s.type().isEnum()
                ? Arrays.stream(s.type().getEnumConstants()).map(e -> ((Enum<?>) e).name())
                        .collect(Collectors.joining(", ", "one of ", ""))
                : TYPES.getOrDefault(s.type(), s.type().getSimpleName());
        return s.secret() ? type + ", **secret**" : type;
    }

    private static String cell(String text) {
        return text.replace("|", "\\|").replace("\n", " ");
    }
}
