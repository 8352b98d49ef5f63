package io.txoutbox.bench;

import io.txoutbox.spi.OutboxRecord;
import io.txoutbox.spi.SendResult;
import io.txoutbox.spi.Transport;
import java.util.List;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.atomic.LongAccumulator;

/**
 * Measures how long the wrapped transport takes per batch (send call to completion of its stage), so a drain can
 * split the relay's batch time into broker time and everything else (claim, mark, commit in PostgreSQL).
 */
final class TimedTransport implements Transport {

    private final Transport delegate;
    private final LongAdder batches = new LongAdder();
    private final LongAdder records = new LongAdder();
    private final LongAdder nanos = new LongAdder();
    private final LongAccumulator maxNanos = new LongAccumulator(Math::max, 0);

    TimedTransport(Transport delegate) {
        this.delegate = delegate;
    }

    @Override
    public CompletionStage<List<SendResult>> send(String lane, List<OutboxRecord> batch) {
        long t0 = System.nanoTime();
        return delegate.send(lane, batch).whenComplete((r, e) -> {
            long d = System.nanoTime() - t0;
            batches.increment();
            records.add(batch.size());
            nanos.add(d);
            maxNanos.accumulate(d);
        });
    }

    @Override
    public void prepare(String lane) {
        delegate.prepare(lane);
    }

    long batches() {
        return batches.sum();
    }

    /** Mean milliseconds per batch in the transport. */
    double meanMillis() {
        long b = batches.sum();
        return b == 0 ? Double.NaN : nanos.sum() / 1e6 / b;
    }

    double maxMillis() {
        return maxNanos.get() / 1e6;
    }

    /** Total seconds spent in the transport (summed over lanes). */
    double totalSeconds() {
        return nanos.sum() / 1e9;
    }

    void reset() {
        batches.reset();
        records.reset();
        nanos.reset();
        maxNanos.reset();
    }

    @Override
    public void close() {
        delegate.close();
    }
}
