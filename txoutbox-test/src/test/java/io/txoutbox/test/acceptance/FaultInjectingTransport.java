package io.txoutbox.test.acceptance;

import io.txoutbox.spi.OutboxRecord;
import io.txoutbox.spi.SendResult;
import io.txoutbox.spi.Transport;
import io.txoutbox.spi.TransportLane;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;
import java.util.function.Predicate;

/**
 * Wraps a real transport and fails chosen records retriably before they reach it — in the middle of a batch —
 * keeping the transport contract (later records of a failed key are not sent, they come back {@code COLLATERAL}).
 * Everything else goes to the real transport, through the same entry points the relay uses (the lane's fencing key
 * and {@code prepare} included). It also records the size of every batch the relay hands over.
 */
public final class FaultInjectingTransport implements Transport {

    private final Transport delegate;
    private final Predicate<OutboxRecord> fail;
    private final AtomicLong injected = new AtomicLong();
    private final List<Integer> batchSizes = new CopyOnWriteArrayList<>();

    public FaultInjectingTransport(Transport delegate, Predicate<OutboxRecord> fail) {
        this.delegate = delegate;
        this.fail = fail;
    }

    /** How many records were failed so far. */
    public long injected() {
        return injected.get();
    }

    /** The size of every batch handed over so far, failed records included. */
    public List<Integer> batchSizes() {
        return List.copyOf(batchSizes);
    }

    @Override
    public CompletionStage<List<SendResult>> send(String lane, List<OutboxRecord> batch) {
        return send(batch, passed -> delegate.send(lane, passed));
    }

    @Override
    public CompletionStage<List<SendResult>> send(TransportLane lane, List<OutboxRecord> batch) {
        return send(batch, passed -> delegate.send(lane, passed));
    }

    @Override
    public CompletionStage<Void> prepare(TransportLane lane) {
        return delegate.prepare(lane);
    }

    private CompletionStage<List<SendResult>> send(List<OutboxRecord> batch,
            Function<List<OutboxRecord>, CompletionStage<List<SendResult>>> sender) {
        batchSizes.add(batch.size());
        SendResult[] results = new SendResult[batch.size()];
        Set<String> failedKeys = new HashSet<>();
        List<OutboxRecord> passed = new ArrayList<>();
        List<Integer> positions = new ArrayList<>();
        for (int i = 0; i < batch.size(); i++) {
            OutboxRecord r = batch.get(i);
            if (r.key() != null && failedKeys.contains(r.key())) {
                results[i] = SendResult.collateral(new IllegalStateException("earlier record of the key failed"));
            } else if (fail.test(r)) {
                injected.incrementAndGet();
                if (r.key() != null) {
                    failedKeys.add(r.key());
                }
                results[i] = SendResult.retriable(new IllegalStateException("injected send failure"));
            } else {
                passed.add(r);
                positions.add(i);
            }
        }
        if (passed.isEmpty()) {
            return CompletableFuture.completedFuture(List.of(results));
        }
        return sender.apply(passed).thenApply(sent -> {
            for (int j = 0; j < sent.size(); j++) {
                results[positions.get(j)] = sent.get(j);
            }
            return List.of(results);
        });
    }

    @Override
    public void close() {
        delegate.close();
    }
}
