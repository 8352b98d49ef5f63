package io.txoutbox;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.txoutbox.spi.Transport;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.postgresql.ds.PGSimpleDataSource;

class ReplayConfigTest {

    private OutboxReplay.Builder builder() {
        return OutboxReplay.builder().dataSource(new PGSimpleDataSource()).transport((Transport) (lane, batch) -> null)
                .name("rebuild");
    }

    private static ReplayConfig config(OutboxReplay.Builder b) {
        return b.build().config();
    }

    @Test
    void every_descriptor_default_is_the_builders_default() {
        // the name is required: it has no default
        ConfigDescriptorChecks.defaultsMatch(ReplayConfig.DESCRIPTOR, config(builder()), "name");
    }

    @Test
    void settings_by_name_set_the_builder() {
        ConfigDescriptorChecks.textSets(ReplayConfig.DESCRIPTOR, this::builder, ReplayConfigTest::config,
                Map.ofEntries(Map.entry("name", "orders-2026"), Map.entry("to-topic", "orders-rebuild"),
                        Map.entry("topic", "orders"), Map.entry("aggregate-type", "Order"),
                        Map.entry("aggregate-id", "42"), Map.entry("event-type", "OrderPlaced"),
                        Map.entry("created-from", "2026-11-01T00:00:00Z"),
                        Map.entry("created-to", "2026-12-01T00:00:00Z"), Map.entry("id-from", "10"),
                        Map.entry("id-to", "1_000"), Map.entry("max-rate", "500"), Map.entry("batch-size", "200"),
                        Map.entry("send-timeout", "5s"), Map.entry("retry-backoff-max", "1s"),
                        Map.entry("when-unpublished", "report"), Map.entry("wait-timeout", "1m")),
                Map.ofEntries(Map.entry("name", "orders-2026"), Map.entry("to-topic", "orders-rebuild"),
                        Map.entry("topic", "orders"), Map.entry("aggregate-type", "Order"),
                        Map.entry("aggregate-id", "42"), Map.entry("event-type", "OrderPlaced"),
                        Map.entry("created-from", Instant.parse("2026-11-01T00:00:00Z")),
                        Map.entry("created-to", Instant.parse("2026-12-01T00:00:00Z")), Map.entry("id-from", 10L),
                        Map.entry("id-to", 1_000L), Map.entry("max-rate", 500.0), Map.entry("batch-size", 200),
                        Map.entry("send-timeout", Duration.ofSeconds(5)),
                        Map.entry("retry-backoff-max", Duration.ofSeconds(1)),
                        Map.entry("when-unpublished", OutboxReplay.WhenUnpublished.REPORT),
                        Map.entry("wait-timeout", Duration.ofMinutes(1))));
    }

    @Test
    void a_bad_setting_names_it_and_changes_nothing() {
        ConfigDescriptorChecks.badSettingsChangeNothing(ReplayConfig.DESCRIPTOR, this::builder,
                ReplayConfigTest::config, "batch-size", "10", "created-from", "yesterday");
    }

    @Test
    void a_bad_value_from_the_builder_names_the_property() {
        assertThatThrownBy(() -> builder().batchSize(0).build()).isInstanceOf(InvalidConfigurationException.class)
                .hasMessage("replay.batchSize must be between 1 and 100000, was 0 (setting txoutbox.replay.batch-size)");
        assertThatThrownBy(() -> builder().toTopic("..").build())
                .hasMessageContaining("replay.toTopic").hasMessageContaining("txoutbox.replay.to-topic");
        assertThatThrownBy(() -> builder().idBetween(5, 4).build())
                .hasMessageContaining("replay.idFrom").hasMessageContaining("txoutbox.replay.id-from");
    }
}
