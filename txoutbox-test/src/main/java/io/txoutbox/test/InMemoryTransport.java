package io.txoutbox.test;

import io.txoutbox.internal.lane.ThreadPlace;
import io.txoutbox.spi.OutboxRecord;
import io.txoutbox.spi.SendResult;
import io.txoutbox.spi.Transport;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Predicate;

/**
 * A {@link Transport} that keeps what it "sends" in memory, for testing services without a broker:
 *
 * <pre>{@code
 * InMemoryTransport transport = new InMemoryTransport();
 * // run the relay with it, write through your service, then:
 * transport.awaitDelivered(e -> e.eventType().equals("OrderCreated"), Duration.ofSeconds(5));
 * assertEquals(1, transport.delivered("orders").size());
 * }</pre>
 *
 * It can be told to fail chosen records ({@link #failWhen}) or to be down ({@link #goDown()}). It keeps the ordering
 * contract of {@link Transport}: once a record of a key fails, the later records of that key in the same batch are
 * not delivered (reported {@code COLLATERAL}), so tests see the same per-key behaviour as with Kafka.
 */
public final class InMemoryTransport implements Transport {

    private final List<OutboxRecord> delivered = new CopyOnWriteArrayList<>();
    private final List<Rule> rules = new CopyOnWriteArrayList<>();
    private final List<Integer> batchSizes = new CopyOnWriteArrayList<>();
    private volatile boolean down;
    private volatile boolean allOrNothing;
    private volatile boolean closed;
    private final Object monitor = new Object();

    /** A standing failure rule; {@link #remove()} it to let the records through again. */
    public final class Rule {
        private final Predicate<OutboxRecord> matches;
        private final SendResult.Kind kind;
        private final String message;
        private volatile int remaining;

        private Rule(Predicate<OutboxRecord> matches, SendResult.Kind kind, String message, int times) {
            this.matches = matches;
            this.kind = kind;
            this.message = message;
            this.remaining = times;
        }

        public void remove() {
            rules.remove(this);
        }
    }

    /** Fails every matching record, retriably or permanently, until the rule is removed. */
    public Rule failWhen(Predicate<OutboxRecord> matches, SendResult.Kind kind) {
        return failWhen(matches, kind, Integer.MAX_VALUE);
    }

    /** Fails the next {@code times} matching records. */
    public Rule failWhen(Predicate<OutboxRecord> matches, SendResult.Kind kind, int times) {
        Objects.requireNonNull(matches, "matches");
        if (kind == SendResult.Kind.COLLATERAL) {
            throw new IllegalArgumentException("fail records as RETRIABLE, UNAVAILABLE or PERMANENT; COLLATERAL "
                    + "follows from them");
        }
        Rule rule = new Rule(matches, kind, "injected " + kind.name().toLowerCase() + " failure", times);
        rules.add(rule);
        return rule;
    }

    /** Fails the event with this id (once, retriably) — e.g. a record in the middle of a batch. */
    public Rule failOnce(UUID eventId) {
        return failWhen(r -> r.eventId().equals(eventId), SendResult.Kind.RETRIABLE, 1);
    }

    /**
     * Makes every batch all or nothing, like the Kafka transport's one transaction per batch: when a record fails,
     * nothing of the batch is delivered and every other record is reported {@code COLLATERAL}.
     */
    public InMemoryTransport allOrNothing(boolean allOrNothing) {
        this.allOrNothing = allOrNothing;
        return this;
    }

    /** From now on every send fails as {@code UNAVAILABLE}, like a broker that is down. */
    public void goDown() {
        down = true;
    }

    public void comeUp() {
        down = false;
    }

    @Override
    public CompletionStage<List<SendResult>> send(String lane, List<OutboxRecord> batch) {
        if (closed) {
            return CompletableFuture.failedFuture(new IllegalStateException("InMemoryTransport is closed"));
        }
        batchSizes.add(batch.size());
        // a broker is up or down for the whole batch: read once, so a comeUp() on another thread while the batch is
        // sent cannot deliver a key's later record after its earlier one was refused
        boolean downForThisBatch = down;
        List<SendResult> results = new ArrayList<>(batch.size());
        Set<String> failedKeys = new HashSet<>();
        for (OutboxRecord r : batch) {
            if (downForThisBatch) {
                results.add(SendResult.unavailable(new IllegalStateException("in-memory broker is down")));
                continue;
            }
            if (r.key() != null && failedKeys.contains(r.key())) {
                results.add(SendResult.collateral(
                        new IllegalStateException("an earlier record of key " + r.key() + " failed")));
                continue;
            }
            Rule rule = firstMatching(r);
            if (rule != null) {
                if (r.key() != null) {
                    failedKeys.add(r.key());
                }
                results.add(new SendResult.Failed(rule.kind, new IllegalStateException(rule.message)));
                continue;
            }
            results.add(null); // delivered, unless the batch is all or nothing and something failed
        }
        boolean anyFailed = results.stream().anyMatch(x -> x != null);
        for (int i = 0; i < batch.size(); i++) {
            if (results.get(i) != null) {
                continue;
            }
            if (allOrNothing && anyFailed) {
                results.set(i, SendResult.collateral(new IllegalStateException("batch rolled back")));
            } else {
                delivered.add(batch.get(i));
                results.set(i, new SendResult.Delivered(0, delivered.size() - 1L));
            }
        }
        synchronized (monitor) {
            monitor.notifyAll();
        }
        return CompletableFuture.completedFuture(results);
    }

    private Rule firstMatching(OutboxRecord r) {
        for (Rule rule : rules) {
            if (rule.remaining > 0 && rule.matches.test(r)) {
                synchronized (rule) {
                    if (rule.remaining <= 0) {
                        continue;
                    }
                    if (rule.remaining != Integer.MAX_VALUE) {
                        rule.remaining--;
                    }
                }
                return rule;
            }
        }
        return null;
    }

    /** Everything delivered so far, in delivery order (redeliveries included). */
    public List<OutboxRecord> delivered() {
        return List.copyOf(delivered);
    }

    /** Delivered records of one topic, in delivery order. */
    public List<OutboxRecord> delivered(String topic) {
        return delivered.stream().filter(r -> r.topic().equals(topic)).toList();
    }

    /** Sizes of the batches handed over so far. */
    public List<Integer> batchSizes() {
        return List.copyOf(batchSizes);
    }

    /**
     * Where this JVM's relay lane threads are, for a failed wait: a lane that never took its lane shows what it waits
     * for (the pool, the database), one that did shows its idle wait.
     */
    private static String relayThreads() {
        List<String> places = new ArrayList<>();
        Thread.getAllStackTraces().entrySet().stream()
                .filter(e -> e.getKey().getName().startsWith("txoutbox-relay-")
                        && !e.getKey().getName().endsWith("-lease"))
                .sorted(java.util.Map.Entry.comparingByKey(java.util.Comparator.comparing(Thread::getName)))
                .forEach(e -> places.add(e.getKey().getName() + " "
                        + ThreadPlace.describe(e.getKey().getState(), e.getValue(), 6)));
        return places.isEmpty() ? "; no relay lane thread runs in this JVM" : "; relay threads: " + places;
    }

    /** Waits until at least {@code count} delivered records match, or throws {@link AssertionError}. */
    public List<OutboxRecord> awaitDelivered(Predicate<OutboxRecord> matches, int count, Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (true) {
            List<OutboxRecord> found = delivered.stream().filter(matches).toList();
            if (found.size() >= count) {
                return found;
            }
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                throw new AssertionError("expected " + count + " delivered record(s) matching the condition within "
                        + timeout + ", found " + found.size() + " (delivered in all: " + delivered.size() + ")"
                        + relayThreads());
            }
            synchronized (monitor) {
                try {
                    monitor.wait(Math.max(1, Math.min(50, left / 1_000_000)));
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new AssertionError("interrupted while waiting for deliveries", e);
                }
            }
        }
    }

    /** Waits for one delivered record matching the condition. */
    public OutboxRecord awaitDelivered(Predicate<OutboxRecord> matches, Duration timeout) {
        return awaitDelivered(matches, 1, timeout).get(0);
    }

    /** Waits until the event with this id was delivered. */
    public OutboxRecord awaitDelivered(UUID eventId, Duration timeout) {
        return awaitDelivered(r -> r.eventId().equals(eventId), timeout);
    }

    /** Forgets what was delivered and every failure rule; the transport is up again. */
    public void reset() {
        delivered.clear();
        rules.clear();
        batchSizes.clear();
        down = false;
    }

    @Override
    public void close() {
        closed = true;
    }
}
