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
        return timed(batch, () -> delegate.send(lane, batch));
    }

    /** What the relay calls: forwarded as is, so the wrapped transport keys its producers by the outbox's lane. */
    @Override
    public CompletionStage<List<SendResult>> send(io.txoutbox.spi.TransportLane lane, List<OutboxRecord> batch) {
        return timed(batch, () -> delegate.send(lane, batch));
    }

    private CompletionStage<List<SendResult>> timed(List<OutboxRecord> batch,
            java.util.function.Supplier<CompletionStage<List<SendResult>>> send) {
        long t0 = System.nanoTime();
        return send.get().whenComplete((r, e) -> {
            long d = System.nanoTime() - t0;
            batches.increment();
            records.add(batch.size());
            nanos.add(d);
            maxNanos.accumulate(d);
        });
    }

    @Override
    public java.util.concurrent.CompletionStage<Void> prepare(io.txoutbox.spi.TransportLane lane) {
        return delegate.prepare(lane);
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
