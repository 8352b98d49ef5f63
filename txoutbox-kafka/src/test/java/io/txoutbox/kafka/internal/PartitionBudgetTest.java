package io.txoutbox.kafka.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.txoutbox.InvalidConfigurationException;
import io.txoutbox.kafka.KafkaTransport;
import io.txoutbox.kafka.KafkaTransportConfig;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

class PartitionBudgetTest {

    private static final long MB = 1_048_576;

    @Test
    void withTheIdempotentDefaultsABatchTakesThirtyPartitionsOfTheThirtyTwoBufferMemoryHolds() {
        KafkaTransportConfig config = KafkaTransport.builder().bootstrapServers("127.0.0.1:1")
                .transactionalIdPrefix("app-").mode(KafkaTransport.Mode.IDEMPOTENT).config();
        PartitionBudget budget = PartitionBudget.of(new ProducerSettings(config));
        long admitted = IntStream.range(0, 64).filter(p -> budget.admits("t-" + p, 300)).count();
        assertThat(admitted).isEqualTo(30);
        assertThat(budget.admits("t-3", 300)).as("a partition already in the batch").isTrue();
        assertThat(budget.admits("t-40", 300)).as("a partition past the budget stays out").isFalse();
    }

    @Test
    void aRecordLargerThanBatchSizeReservesItsOwnSize() {
        PartitionBudget budget = new PartitionBudget(10 * MB, MB);
        assertThat(budget.admits("a-0", 6 * MB)).isTrue();
        assertThat(budget.admits("a-1", 300)).isTrue();
        assertThat(budget.admits("a-2", 300)).isTrue();
        assertThat(budget.admits("a-3", 300)).isTrue();
        assertThat(budget.admits("a-4", 300)).isTrue();
        assertThat(budget.admits("a-5", 300)).isFalse();
        assertThat(budget.partitions()).isEqualTo(5);
    }

    @Test
    void theFirstPartitionIsAlwaysAdmittedSoEveryBatchMakesProgress() {
        PartitionBudget budget = new PartitionBudget(MB, MB);
        assertThat(budget.admits("a-0", 3 * MB)).isTrue();
        assertThat(budget.admits("a-1", 10)).isFalse();
    }

    @Test
    void aBufferMemoryWithoutRoomForOneBatchBesideTheMarginIsRejectedWithTheFix() {
        assertThatThrownBy(() -> KafkaTransport.builder().bootstrapServers("127.0.0.1:1")
                .mode(KafkaTransport.Mode.IDEMPOTENT).property("buffer.memory", 2 * MB).build())
                .isInstanceOf(InvalidConfigurationException.class)
                .hasMessageContaining("'buffer.memory' must be at least")
                .hasMessageContaining(String.valueOf(3 * MB))
                .hasMessageContaining("raise buffer.memory or lower batch.size");
        KafkaTransport.builder().bootstrapServers("127.0.0.1:1").mode(KafkaTransport.Mode.IDEMPOTENT)
                .property("buffer.memory", 4 * MB).property("batch.size", 65_536).build().close();
        KafkaTransport.builder().bootstrapServers("127.0.0.1:1").property("buffer.memory", 2 * MB).build().close();
    }
}
