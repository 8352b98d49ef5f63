package io.txoutbox.kafka.internal;

import io.txoutbox.InvalidConfigurationException;
import java.util.HashSet;
import java.util.Set;

/**
 * Mode.IDEMPOTENT: which partitions one relay batch may touch, so that the producer's {@code buffer.memory} holds a
 * whole record batch for every one of them at once.
 *
 * <p>The producer reserves, for each partition it holds records for, one buffer of {@code batch.size} (or of the
 * first record's size, if that is larger). When a send finds the pool empty it waits for memory, and while anything
 * waits the producer treats every partial record batch as ready and sends it: a partition's records of one relay
 * batch then go as several record batches, which can fail apart and reorder a key. So a relay batch takes a new
 * partition only while the buffers of the partitions it already has, plus the new one, fit in
 * {@link #capacity(long, long, long)}; a record whose partition does not fit waits for the next batch, with the rest
 * of its key. The first partition is always admitted, so every batch makes progress.
 */
public final class PartitionBudget {

    private final long capacity;
    private final long batchSize;
    private final Set<String> admitted = new HashSet<>();
    private long reserved;

    PartitionBudget(long capacity, long batchSize) {
        this.capacity = capacity;
        this.batchSize = batchSize;
    }

    static PartitionBudget of(ProducerSettings settings) {
        return new PartitionBudget(capacity(settings.bufferMemory(), settings.batchSize(), settings.maxRequestSize()),
                settings.batchSize());
    }

    /**
     * The part of {@code buffer.memory} one relay batch may reserve: all of it but two of the largest buffers the
     * producer allocates ({@code max(batch.size, max.request.size)}). The margin covers the buffers of the previous
     * batch that the producer's I/O thread returns to the pool just after {@code flush()} returned.
     */
    static long capacity(long bufferMemory, long batchSize, long maxRequestSize) {
        return bufferMemory - 2 * Math.max(batchSize, maxRequestSize);
    }

    /** Mode.IDEMPOTENT: buffer.memory must leave room for at least one record batch beside the margin. */
    public static void requireRoom(long bufferMemory, long batchSize, long maxRequestSize) {
        if (capacity(bufferMemory, batchSize, maxRequestSize) < batchSize) {
            throw new InvalidConfigurationException("Kafka property 'buffer.memory' must be at least "
                    + "batch.size + 2 x max(batch.size, max.request.size) in Mode.IDEMPOTENT ("
                    + (batchSize + 2 * Math.max(batchSize, maxRequestSize)) + "), was " + bufferMemory
                    + ": each partition of a batch needs a whole record batch in memory; raise buffer.memory or "
                    + "lower batch.size");
        }
    }

    /**
     * Whether the record, {@code recordBytes} when alone in a batch, may go to {@code partition} in this relay batch;
     * reserves the partition's buffer when it is new. A partition once admitted stays admitted.
     */
    boolean admits(String partition, long recordBytes) {
        if (admitted.contains(partition)) {
            return true;
        }
        long buffer = Math.max(batchSize, recordBytes);
        if (!admitted.isEmpty() && reserved + buffer > capacity) {
            return false;
        }
        admitted.add(partition);
        reserved += buffer;
        return true;
    }

    int partitions() {
        return admitted.size();
    }
}
