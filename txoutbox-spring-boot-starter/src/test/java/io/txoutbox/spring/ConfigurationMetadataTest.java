package io.txoutbox.spring;

import static org.assertj.core.api.Assertions.assertThat;

import io.txoutbox.ConfigDescriptor;
import io.txoutbox.HealthConfig;
import io.txoutbox.InboxWorker;
import io.txoutbox.InboxWorkerConfig;
import io.txoutbox.Outbox;
import io.txoutbox.OutboxConfig;
import io.txoutbox.OutboxHealth;
import io.txoutbox.OutboxSchema;
import io.txoutbox.PollingRelay;
import io.txoutbox.RelayConfig;
import io.txoutbox.kafka.KafkaTransport;
import io.txoutbox.kafka.KafkaTransportConfig;
import io.txoutbox.spring.internal.StarterSettings;
import io.txoutbox.testing.docs.GeneratedFile;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Locale;
import java.util.function.Supplier;
import org.junit.jupiter.api.Test;
import tools.jackson.core.util.DefaultIndenter;
import tools.jackson.core.util.DefaultPrettyPrinter;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.ObjectNode;

/**
 * The starter's {@code META-INF/spring-configuration-metadata.json} (what IDEs complete and document
 * {@code txoutbox.*} properties from) is generated from core's {@link ConfigDescriptor}s and the starter's own
 * {@link StarterSettings}, never written by hand nor by Spring's configuration processor: this test fails when the
 * committed file differs from what they say, and rewrites it with {@code -Dtxoutbox.docs.write=true}.
 */
class ConfigurationMetadataTest {

    static final String REGENERATE = "mvn -B -o -q verify -pl txoutbox-spring-boot-starter -am "
            + "-Dtest=ConfigurationMetadataTest -Dit.test=none -Dsurefire.failIfNoSpecifiedTests=false "
            + "-Dfailsafe.failIfNoSpecifiedTests=false -Dtxoutbox.pg-matrix.skip=true -Dtxoutbox.docs.write=true";

    /**
     * One descriptor the auto-configuration applies: the record that declares it (the group's type), a title, and a
     * builder to apply its settings to.
     */
    record Source<B>(Class<?> type, String title, ConfigDescriptor<B, ?> descriptor, Supplier<B> builder) {
    }

    /**
     * Exactly the descriptors the auto-configuration applies ({@code ConfigurationPropertyBindingTest} checks this
     * list against its sources): the retention, replay, inbox worker and Kafka inbox consumer settings are not in the
     * metadata because the starter makes none of those components, so their properties would do nothing.
     */
    static final List<Source<?>> SOURCES = List.of(
            new Source<>(OutboxSchema.class, "Outbox schema", OutboxSchema.DESCRIPTOR, OutboxSchema::builder),
            new Source<>(OutboxConfig.class, "Outbox writer", OutboxConfig.DESCRIPTOR, Outbox::builder),
            new Source<>(RelayConfig.class, "Polling relay", RelayConfig.DESCRIPTOR, PollingRelay::builder),
            new Source<>(InboxWorkerConfig.class, "Inbox worker (with txoutbox.inbox-worker.consumer set)",
                    InboxWorkerConfig.DESCRIPTOR, InboxWorker::builder),
            new Source<>(HealthConfig.class, "Health", HealthConfig.DESCRIPTOR, OutboxHealth::builder),
            new Source<>(KafkaTransportConfig.class, "Kafka transport (on top of Spring's spring.kafka.*)",
                    KafkaTransportConfig.DESCRIPTOR, KafkaTransport::builder));

    private static final JsonMapper JSON = JsonMapper.builder().build();

    @Test
    void theCommittedMetadataIsWhatTheDescriptorsSay() {
        GeneratedFile.check(metadataFile(), render(), REGENERATE);
    }

    static Path metadataFile() {
        return GeneratedFile.inModule("src/main/resources/META-INF/spring-configuration-metadata.json");
    }

    static String render() {
        ObjectNode root = JSON.createObjectNode();
        ArrayNode groups = root.putArray("groups");
        ArrayNode properties = root.putArray("properties");
        ArrayNode hints = root.putArray("hints");

        groups.addObject().put("name", "txoutbox").put("type", StarterSettings.class.getName())
                .put("sourceType", StarterSettings.class.getName())
                .put("description", "The starter's own settings (the others are core's, under the same names "
                        + "everywhere: docs/configuration.md)");
        for (StarterSettings.Setting s : StarterSettings.ALL) {
            boolean bool = s.allowed().equals(List.of("true", "false"));
            ObjectNode p = properties.addObject().put("name", s.property())
                    .put("type", (bool ? Boolean.class : String.class).getName())
                    .put("description", s.doc()).put("sourceType", StarterSettings.class.getName());
            if (bool) {
                p.put("defaultValue", Boolean.parseBoolean(s.defaultText()));
            } else {
                p.put("defaultValue", s.defaultText());
            }
            if (!bool && !s.allowed().isEmpty()) {
                ArrayNode values = hints.addObject().put("name", s.property()).putArray("values");
                s.allowed().forEach(v -> values.addObject().put("value", v));
            }
        }

        for (Source<?> source : SOURCES) {
            ConfigDescriptor<?, ?> d = source.descriptor();
            groups.addObject().put("name", d.prefix()).put("type", source.type().getName())
                    .put("sourceType", source.type().getName()).put("description", source.title());
            for (ConfigDescriptor.Setting s : d.settings()) {
                ObjectNode p = properties.addObject().put("name", s.property()).put("type", type(s))
                        .put("description", description(s)).put("sourceType", source.type().getName());
                defaultValue(p, s);
                if (s.type().isEnum()) {
                    ArrayNode values = hints.addObject().put("name", s.property()).putArray("values");
                    for (Object constant : s.type().getEnumConstants()) {
                        values.addObject().put("value", ((Enum<?>) constant).name());
                    }
                }
            }
        }
        DefaultIndenter lines = new DefaultIndenter("  ", "\n");
        DefaultPrettyPrinter printer = new DefaultPrettyPrinter().withObjectIndenter(lines).withArrayIndenter(lines);
        return JSON.writer().with(printer).writeValueAsString(root) + "\n";
    }

    /** The Java type Spring's tools understand: sizes as {@code DataSize}, enums by their class. */
    static String type(ConfigDescriptor.Setting s) {
        if ("bytes".equals(s.unit())) {
            return "org.springframework.util.unit.DataSize";
        }
        if (s.type().isEnum() || List.of(String.class, Integer.class, Long.class, Boolean.class, Double.class,
                Duration.class, Instant.class).contains(s.type())) {
            return s.type().getName();
        }
        throw new AssertionError(s.property() + ": no metadata type for " + s.type().getName()
                + " (add it here and in ConfigurationPropertyBindingTest's samples)");
    }

    private static void defaultValue(ObjectNode p, ConfigDescriptor.Setting s) {
        Object v = s.defaultValue();
        if (v == null) {
            return;
        }
        if ("bytes".equals(s.unit())) {
            p.put("defaultValue", s.defaultText());      // 16MB: DataSize's text form
        } else if (v instanceof Integer i) {
            p.put("defaultValue", i);
        } else if (v instanceof Long l) {
            p.put("defaultValue", l);
        } else if (v instanceof Double x) {
            p.put("defaultValue", x);
        } else if (v instanceof Boolean b) {
            p.put("defaultValue", b);
        } else {
            p.put("defaultValue", s.defaultText());      // 500ms, PARK_KEY, text
        }
    }

    /** The setting's own doc; a secret one says so unless its doc does. */
    private static String description(ConfigDescriptor.Setting s) {
        if (s.secret() && !s.doc().toLowerCase(Locale.ROOT).contains("secret")) {
            return s.doc() + " (secret: never logged)";
        }
        return s.doc();
    }

    /** For the other test: the metadata as it is committed. */
    static JsonNode committed() throws IOException {
        return JSON.readTree(Files.readString(metadataFile(), StandardCharsets.UTF_8));
    }
}
