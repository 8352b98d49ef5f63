package io.txoutbox.internal.relay;

import static org.assertj.core.api.Assertions.assertThat;

import io.txoutbox.spi.OutboxRecord;
import io.txoutbox.spi.PartitionUnavailableException;
import io.txoutbox.spi.SendResult;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.Test;

class PartitionBackoffTest {

    private static final long NOW = Instant.parse("2026-12-01T12:00:00Z").toEpochMilli();

    private static OutboxRecord agedMs(long ageMs) {
        return new OutboxRecord(1, UUID.randomUUID(), "t", "k", null, null, null, "E", new byte[0], true, Map.of(),
                Instant.ofEpochMilli(NOW - ageMs), 0);
    }

    @Test
    void the_delay_is_an_eighth_of_the_age_between_the_shortest_pause_and_the_outage_maximum() {
        Duration max = Duration.ofSeconds(5);
        assertThat(PartitionBackoff.delayMs(agedMs(0), max, NOW)).isEqualTo(100);
        assertThat(PartitionBackoff.delayMs(agedMs(-5_000), max, NOW)).as("clock skew").isEqualTo(100);
        assertThat(PartitionBackoff.delayMs(agedMs(8_000), max, NOW)).isEqualTo(1_000);
        assertThat(PartitionBackoff.delayMs(agedMs(3_600_000), max, NOW)).isEqualTo(5_000);
    }

    @Test
    void only_an_unavailable_partition_is_partition_scoped() {
        PartitionUnavailableException partition = new PartitionUnavailableException("t-0", "sick", null);
        assertThat(PartitionBackoff.isPartitionScoped(new SendResult.Failed(SendResult.Kind.UNAVAILABLE, partition)))
                .isTrue();
        assertThat(PartitionBackoff.isPartitionScoped(new SendResult.Failed(SendResult.Kind.RETRIABLE, partition)))
                .isFalse();
        assertThat(PartitionBackoff.isPartitionScoped(
                (SendResult.Failed) SendResult.unavailable(new IllegalStateException("broker down")))).isFalse();
    }
}
