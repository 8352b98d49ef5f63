package io.txoutbox.kafka.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.common.errors.NotEnoughReplicasException;
import org.junit.jupiter.api.Test;

/**
 * The quarantine's bookkeeping with metadata that cannot be read (no broker): a partition stays at least its least
 * time, then gets a trial; one that comes back soon after stays twice as long.
 */
class PartitionQuarantineTest {

    private static PartitionQuarantine unreachable() {
        return new PartitionQuarantine("0", Map.of("bootstrap.servers", "127.0.0.1:1", "request.timeout.ms", "200",
                "default.api.timeout.ms", "200"), 200);
    }

    @Test
    void a_partition_stays_its_least_time_and_a_returning_one_stays_twice_as_long() throws Exception {
        try (PartitionQuarantine q = unreachable()) {
            assertThat(q.isEmpty()).isTrue();
            long first = System.nanoTime();
            assertThat(q.add("orders", 3, new NotEnoughReplicasException("isr 1 < 2")))
                    .hasMessageContaining("partition orders-3 failed").hasMessageContaining("NotEnoughReplicas");
            q.add("orders", 3, new NotEnoughReplicasException("isr 1 < 2")); // the same batch's other records
            assertThat(q.contains("orders", 3)).isTrue();
            assertThat(q.contains("orders", 2)).isFalse();
            assertThat(q.hasTopic("orders")).isTrue();
            assertThat(q.hasTopic("payments")).isFalse();
            assertThat(q.causeFor("orders", 3).getMessage()).startsWith("partition orders-3 unavailable since ")
                    .contains("NotEnoughReplicasException: isr 1 < 2");
            assertThat(q.causeFor("orders", 3).partition()).isEqualTo("orders-3");
            assertThat(q.causeFor("orders", 2)).isNull();

            q.check();
            assertThat(q.contains("orders", 3)).as("within its least time (1 s)").isTrue();
            awaitReleased(q, 4_000);
            assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - first))
                    .as("let out for a trial after its least time, not before").isBetween(1_000L, 4_000L);

            long back = System.nanoTime();
            q.add("orders", 3, new NotEnoughReplicasException("isr 1 < 2")); // it came back at once
            TimeUnit.MILLISECONDS.sleep(1_300);
            q.check();
            assertThat(q.contains("orders", 3)).as("a partition that came back stays 2 s").isTrue();
            awaitReleased(q, 5_000);
            assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - back)).isBetween(2_000L, 5_000L);
        }
    }

    /** Checks until the partition is out; fails past {@code maxMs}. */
    private static void awaitReleased(PartitionQuarantine q, long maxMs) throws InterruptedException {
        long start = System.nanoTime();
        while (q.contains("orders", 3)) {
            long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
            assertThat(ms).as("released within " + maxMs + " ms").isLessThan(maxMs);
            q.check();
            TimeUnit.MILLISECONDS.sleep(50);
        }
    }
}
