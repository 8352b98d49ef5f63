package io.txoutbox;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.postgresql.ds.PGSimpleDataSource;

class OutboxRetentionConfigTest {

    private final DataSource ds = new PGSimpleDataSource();

    @Test
    void invalid_values_are_refused_naming_the_property() {
        assertThatThrownBy(() -> OutboxRetention.builder().build())
                .isInstanceOf(InvalidConfigurationException.class).hasMessageContaining("retention.dataSource");
        assertThatThrownBy(() -> OutboxRetention.builder().dataSource(ds).batchSize(0).build())
                .hasMessage("retention.batchSize must be between 1 and 100000, was 0");
        assertThatThrownBy(() -> OutboxRetention.builder().dataSource(ds).retention(Duration.ofDays(-1)).build())
                .hasMessageContaining("retention.retention must be >= PT0S");
        assertThatThrownBy(() -> OutboxRetention.builder().dataSource(ds).interval(Duration.ZERO).build())
                .hasMessageContaining("retention.interval");
        assertThatThrownBy(() -> OutboxRetention.builder().dataSource(ds)
                .inboxRetention(Duration.ofDays(1), null).build())
                .hasMessageContaining("retention.inboxRetention needs both ages");
    }
}
