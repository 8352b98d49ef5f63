package io.txoutbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.Map;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.postgresql.ds.PGSimpleDataSource;

class OutboxRetentionConfigTest {

    private final DataSource ds = new PGSimpleDataSource();

    private OutboxRetention.Builder builder() {
        return OutboxRetention.builder().dataSource(ds);
    }

    private static RetentionConfig config(OutboxRetention.Builder b) {
        return b.build().config();
    }

    @Test
    void invalid_values_are_refused_naming_the_property() {
        assertThatThrownBy(() -> OutboxRetention.builder().build())
                .isInstanceOf(InvalidConfigurationException.class).hasMessageContaining("retention.dataSource");
        assertThatThrownBy(() -> OutboxRetention.builder().dataSource(ds).batchSize(0).build())
                .hasMessage("retention.batchSize must be between 1 and 100000, was 0"
                        + " (setting txoutbox.retention.batch-size)");
        assertThatThrownBy(() -> OutboxRetention.builder().dataSource(ds).retention(Duration.ofDays(-1)).build())
                .hasMessage("retention.retention must be >= 0, was -1d (setting txoutbox.retention.retention)");
        assertThatThrownBy(() -> OutboxRetention.builder().dataSource(ds).interval(Duration.ZERO).build())
                .hasMessageContaining("retention.interval").hasMessageContaining("txoutbox.retention.interval");
        assertThatThrownBy(() -> OutboxRetention.builder().dataSource(ds)
                .inboxRetention(Duration.ofDays(1), null).build())
                .hasMessageContaining("retention.inboxRetention needs both ages");
    }

    @Test
    void every_descriptor_default_is_the_builders_default() {
        ConfigDescriptorChecks.defaultsMatch(RetentionConfig.DESCRIPTOR, config(builder()));
    }

    @Test
    void settings_by_name_set_the_builder() {
        ConfigDescriptorChecks.textSets(RetentionConfig.DESCRIPTOR, this::builder, OutboxRetentionConfigTest::config,
                Map.of("retention", "3d", "batch-size", "1_000", "pause-between-batches", "0ms", "interval", "5m",
                        "lock-timeout", "250ms", "statement-timeout", "PT10S", "close-timeout", "1s",
                        "processed-event-retention", "2d", "inbox-retention", "1d"),
                Map.of("retention", Duration.ofDays(3), "batch-size", 1_000, "pause-between-batches", Duration.ZERO,
                        "interval", Duration.ofMinutes(5), "lock-timeout", Duration.ofMillis(250),
                        "statement-timeout", Duration.ofSeconds(10), "close-timeout", Duration.ofSeconds(1),
                        "processed-event-retention", Duration.ofDays(2), "inbox-retention", Duration.ofDays(1)));
        assertThat(config(builder().inboxRetention(Duration.ofDays(2), Duration.ofDays(1))).purgesInbox()).isTrue();
    }

    @Test
    void a_bad_setting_names_it_and_changes_nothing() {
        ConfigDescriptorChecks.badSettingsChangeNothing(RetentionConfig.DESCRIPTOR, this::builder,
                OutboxRetentionConfigTest::config, "batch-size", "10", "interval", "soon");
        assertThatThrownBy(() -> builder().settings(Map.of("batch-size", "0")).build())
                .hasMessageContaining("retention.batchSize").hasMessageContaining("txoutbox.retention.batch-size");
    }
}
