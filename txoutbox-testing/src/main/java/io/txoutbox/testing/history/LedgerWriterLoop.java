package io.txoutbox.testing.history;

import java.sql.Connection;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.SplittableRandom;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What each {@link LedgerWriter} thread runs: claims events of the budget, waits for their slot at the target rate,
 * picks keys, runs the {@link LedgerTransaction} and counts, keeps and backs off from its failures.
 */
final class LedgerWriterLoop {

    private static final Logger log = LoggerFactory.getLogger(LedgerWriter.class);

    private final LedgerWriterConfig config;
    private final List<String> keyNames;
    private final LedgerTransaction transaction;
    private final AtomicLong issuedEvents = new AtomicLong();
    private final AtomicLong errorCount = new AtomicLong();
    private final AtomicLong failedEvents = new AtomicLong();
    private final List<Throwable> keptErrors = Collections.synchronizedList(new ArrayList<>());
    private volatile boolean stopping;
    private volatile long startNanos;
    private volatile long deadlineNanos;

    LedgerWriterLoop(LedgerWriterConfig config, List<String> keyNames) {
        this.config = config;
        this.keyNames = keyNames;
        this.transaction = new LedgerTransaction(config);
    }

    /** Starts the clock of the duration and the target rate; before the threads start. */
    void begin() {
        startNanos = System.nanoTime();
        deadlineNanos = config.duration() == null ? Long.MAX_VALUE : startNanos + config.duration().toNanos();
    }

    /** The writers stop after their current transaction (or wait for a slot). */
    void requestStop() {
        stopping = true;
    }

    LedgerWriter.Stats stats() {
        return new LedgerWriter.Stats(transaction.committedTransactions.get(), transaction.committedEvents.get(),
                transaction.rolledBackTransactions.get(), transaction.rolledBackEvents.get(),
                transaction.retries.get(), errorCount.get(), failedEvents.get(), transaction.unknownOutcomes.get());
    }

    List<UUID> rolledBackEventIds() {
        return List.copyOf(transaction.rolledBackIds);
    }

    List<Throwable> errors() {
        synchronized (keptErrors) {
            return List.copyOf(keptErrors);
        }
    }

    void run(int writer, CountDownLatch finished) {
        SplittableRandom random = new SplittableRandom(config.seed() * 1_000_003L + writer);
        Connection connection = null;
        int consecutiveFailures = 0;
        try {
            while (!stopping && !Thread.currentThread().isInterrupted()) {
                long firstEvent = claimEvents();
                if (firstEvent < 0) {
                    break;
                }
                int count = (int) Math.min(config.eventsPerTransaction(),
                        config.events() < 0 ? Long.MAX_VALUE : config.events() - firstEvent);
                long intendedStart = awaitSlot(firstEvent);
                if (intendedStart == Long.MIN_VALUE) {
                    break; // stopped or past the deadline while waiting: the claimed events are not written
                }
                List<String> keys = pickKeys(random, count);
                boolean rollBack = random.nextDouble() < config.rollbackShare();
                List<UUID> ids = new ArrayList<>(count);
                for (int i = 0; i < count; i++) {
                    ids.add(config.eventIds().get());
                }
                try {
                    if (connection == null) {
                        connection = config.dataSource().getConnection();
                        connection.setAutoCommit(false);
                    }
                    transaction.run(connection, writer, keys, ids, rollBack, intendedStart);
                    consecutiveFailures = 0;
                } catch (Throwable e) {
                    consecutiveFailures++;
                    errorCount.incrementAndGet();
                    failedEvents.addAndGet(count);
                    synchronized (keptErrors) {
                        if (keptErrors.size() < LedgerWriter.KEPT_ERRORS) {
                            keptErrors.add(e);
                        }
                    }
                    log.warn("ledger-writer-{}: transaction of events {} failed: {}", writer, ids, e.toString());
                    connection = discardIfBroken(connection);
                    if (e instanceof Error && !(e instanceof AssertionError)) {
                        throw (Error) e;
                    }
                    backOff(consecutiveFailures);
                }
            }
        } finally {
            closeQuietly(connection);
            finished.countDown();
        }
    }

    /**
     * Claims the next {@code eventsPerTransaction} events of the budget (fewer at its end) and returns the number of
     * the first; -1 when the budget is spent or time is up.
     */
    private long claimEvents() {
        if (System.nanoTime() - deadlineNanos >= 0) {
            return -1;
        }
        long first = issuedEvents.getAndAdd(config.eventsPerTransaction());
        return config.events() < 0 || first < config.events() ? first : -1;
    }

    /**
     * With a target rate, parks until the slot of the transaction whose first event is number {@code firstEvent};
     * returns the slot's time, or {@link Long#MIN_VALUE} if stopped or the duration ended first.
     */
    private long awaitSlot(long firstEvent) {
        if (config.targetRate() <= 0) {
            return System.nanoTime();
        }
        long due = startNanos + (long) (firstEvent * 1_000_000_000.0 / config.targetRate());
        while (true) {
            if (stopping || Thread.currentThread().isInterrupted() || due - deadlineNanos >= 0) {
                return Long.MIN_VALUE;
            }
            long wait = due - System.nanoTime();
            if (wait <= 0) {
                return due;
            }
            LockSupport.parkNanos(this, wait);
        }
    }

    private List<String> pickKeys(SplittableRandom random, int count) {
        if (config.mode() == LedgerWriter.MultiEventMode.SAME_KEY || count == 1) {
            return Collections.nCopies(count, keyNames.get(random.nextInt(config.keys())));
        }
        List<String> picked = new ArrayList<>(count);
        while (picked.size() < count) {
            String key = keyNames.get(random.nextInt(config.keys()));
            if (!picked.contains(key)) {
                picked.add(key);
            }
        }
        return picked;
    }

    private static Connection discardIfBroken(Connection connection) {
        if (connection == null) {
            return null;
        }
        try {
            if (!connection.isClosed() && connection.isValid(2)) {
                return connection;
            }
        } catch (SQLException ignored) {
            // treated as broken
        }
        closeQuietly(connection);
        return null;
    }

    private void backOff(int consecutiveFailures) {
        long millis = Math.min(1_000, 5L << Math.min(consecutiveFailures, 8));
        if (!stopping) {
            LockSupport.parkNanos(this, TimeUnit.MILLISECONDS.toNanos(millis));
        }
    }

    private static void closeQuietly(Connection connection) {
        if (connection == null) {
            return;
        }
        try {
            connection.close();
        } catch (SQLException ignored) {
            // nothing left to do with it
        }
    }
}
