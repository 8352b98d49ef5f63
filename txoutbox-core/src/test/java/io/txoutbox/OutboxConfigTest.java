package io.txoutbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.Map;
import org.junit.jupiter.api.Test;

/** The writer's and the schema's descriptors: one name per setting, defaults as built, bad values named. */
class OutboxConfigTest {

    private static OutboxConfig config(Outbox.Builder b) {
        return b.build().config();
    }

    @Test
    void every_descriptor_default_is_the_builders_default() {
        ConfigDescriptorChecks.defaultsMatch(OutboxConfig.DESCRIPTOR, config(Outbox.builder()));
        ConfigDescriptorChecks.defaultsMatch(OutboxSchema.DESCRIPTOR, OutboxSchema.defaults());
        assertThat(OutboxSchema.DESCRIPTOR.prefix()).isEqualTo("txoutbox.schema");
        assertThat(OutboxConfig.DESCRIPTOR.prefix()).isEqualTo("txoutbox.outbox");
    }

    @Test
    void settings_by_name_set_the_writer() {
        ConfigDescriptorChecks.textSets(OutboxConfig.DESCRIPTOR, Outbox::builder, OutboxConfigTest::config,
                Map.of("max-payload-bytes", "512KB", "max-header-bytes", "1024", "notify-on-publish", "true"),
                Map.of("max-payload-bytes", 512 * 1024, "max-header-bytes", 1024, "notify-on-publish", true));
        assertThat(OutboxConfig.DESCRIPTOR.describe(config(Outbox.builder())))
                .isEqualTo("max-payload-bytes=1000000, max-header-bytes=16KB, notify-on-publish=false");
    }

    @Test
    void settings_by_name_set_the_schema_and_its_partitioning() {
        ConfigDescriptorChecks.textSets(OutboxSchema.DESCRIPTOR, OutboxSchema::builder, OutboxSchema.Builder::build,
                Map.of("schema", "orders", "outbox-table", "events", "shards", "64", "partitioning.period", "week"),
                Map.of("schema", "orders", "outbox-table", "events", "shards", 64, "partitioning.period",
                        OutboxPartitioning.Period.WEEK, "partitioning.ahead", 4));
        assertThat(OutboxSchema.builder().settings(Map.of("partitioning.period", "DAY", "partitioning.ahead", "3"))
                .build().partitioning()).isEqualTo(OutboxPartitioning.daily().ahead(3));
        assertThat(OutboxSchema.builder().partitioned(OutboxPartitioning.monthly()).build().partitioning())
                .isEqualTo(OutboxPartitioning.monthly());
        assertThat(OutboxSchema.builder().partitioned(OutboxPartitioning.monthly()).partitioned(null).build()
                .isPartitioned()).isFalse();
    }

    @Test
    void a_bad_setting_names_it_and_changes_nothing() {
        ConfigDescriptorChecks.badSettingsChangeNothing(OutboxConfig.DESCRIPTOR, Outbox::builder,
                OutboxConfigTest::config, "max-header-bytes", "10", "max-payload-bytes", "lots");
        ConfigDescriptorChecks.badSettingsChangeNothing(OutboxSchema.DESCRIPTOR, OutboxSchema::builder,
                OutboxSchema.Builder::build, "shards", "8", "partitioning.period", "fortnight");
    }

    @Test
    void a_bad_value_from_the_builder_names_the_property_and_the_setting() {
        assertThatThrownBy(() -> Outbox.builder().maxHeaderBytes(-1).build())
                .isInstanceOf(InvalidConfigurationException.class)
                .hasMessage("outbox.maxHeaderBytes must be >= 0, was -1 (setting txoutbox.outbox.max-header-bytes)");
        assertThatThrownBy(() -> Outbox.builder().maxPayloadBytes(OutboxConfig.MAX_PAYLOAD_BYTES_LIMIT).build())
                .hasMessage("outbox.maxPayloadBytes must be between 1 and 1073741823, was 1073741824"
                        + " (setting txoutbox.outbox.max-payload-bytes)");
        assertThatThrownBy(() -> Outbox.builder().payloadSerializer(null))
                .isInstanceOf(NullPointerException.class);
        assertThatThrownBy(() -> OutboxSchema.builder().outboxTable("Bad").build())
                .hasMessageContaining("(setting txoutbox.schema.outbox-table)");
        assertThatThrownBy(() -> OutboxSchema.builder().settings(Map.of("partitioning.ahead", "3")).build())
                .isInstanceOf(InvalidConfigurationException.class)
                .hasMessageContaining("schema.partitioning.period is not");
        assertThatThrownBy(() -> OutboxSchema.builder().settings(Map.of("partitioning.period", "DAY",
                "partitioning.ahead", "0")).build())
                .hasMessage("schema.partitioning.ahead must be between 1 and 366, was 0"
                        + " (setting txoutbox.schema.partitioning.ahead)");
    }

    @Test
    void the_four_value_constructor_keeps_a_writer_without_notify() {
        OutboxConfig c = new OutboxConfig(OutboxSchema.defaults(), io.txoutbox.spi.PayloadSerializer.none(), 10, 0);
        assertThat(c.notifyOnPublish()).isFalse();
    }
}
