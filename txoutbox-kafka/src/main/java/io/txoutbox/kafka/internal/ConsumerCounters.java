package io.txoutbox.kafka.internal;

import java.util.concurrent.atomic.LongAdder;

/**
 * The inbox consumer's counters since start, written by the loop thread and read by anyone; the public
 * {@link io.txoutbox.kafka.KafkaInboxConsumer.Stats} is a snapshot of them.
 */
public final class ConsumerCounters {

    final LongAdder polled = new LongAdder();
    final LongAdder stored = new LongAdder();
    final LongAdder applied = new LongAdder();
    final LongAdder duplicates = new LongAdder();
    final LongAdder stale = new LongAdder();
    final LongAdder retries = new LongAdder();
    final LongAdder deadLettered = new LongAdder();
    final LongAdder batches = new LongAdder();
    final LongAdder loopErrors = new LongAdder();
    final LongAdder commitFailures = new LongAdder();
    final LongAdder afterStoreFailures = new LongAdder();

    public long polled() {
        return polled.sum();
    }

    public long stored() {
        return stored.sum();
    }

    public long applied() {
        return applied.sum();
    }

    public long duplicates() {
        return duplicates.sum();
    }

    public long stale() {
        return stale.sum();
    }

    public long retries() {
        return retries.sum();
    }

    public long deadLettered() {
        return deadLettered.sum();
    }

    public long batches() {
        return batches.sum();
    }

    public long loopErrors() {
        return loopErrors.sum();
    }

    public long commitFailures() {
        return commitFailures.sum();
    }

    public long afterStoreFailures() {
        return afterStoreFailures.sum();
    }
}
