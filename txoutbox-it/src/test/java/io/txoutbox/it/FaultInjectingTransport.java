package io.txoutbox.it;

import io.txoutbox.spi.OutboxRecord;
import io.txoutbox.spi.SendResult;
import io.txoutbox.spi.Transport;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Predicate;

/**
 * Wraps a real transport and fails chosen records before they reach it — in the middle of a batch — keeping the
 * transport contract (later records of a failed key are not sent). Everything else goes to the real broker.
 */
final class FaultInjectingTransport implements Transport {

    private final Transport delegate;
    private final Predicate<OutboxRecord> fail;
    private final AtomicLong injected = new AtomicLong();

    FaultInjectingTransport(Transport delegate, Predicate<OutboxRecord> fail) {
        this.delegate = delegate;
        this.fail = fail;
    }

    long injected() {
        return injected.get();
    }

    @Override
    public CompletionStage<List<SendResult>> send(String lane, List<OutboxRecord> batch) {
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
        return delegate.send(lane, passed).thenApply(sent -> {
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
