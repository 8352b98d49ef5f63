package io.txoutbox.testing.history;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Supplier;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Writer threads that commit events for a fixed set of keys in real PostgreSQL transactions and record each event in
 * the {@link Ledger}, in the same transaction as the outbox row written by the {@link EventInserter}.
 *
 * <p>Each transaction locks its key rows ({@code UPDATE ledger_key_seq SET seq = seq + m … RETURNING seq}, keys in
 * sorted order so writers never deadlock each other), then for every event inserts the ledger row and calls the
 * inserter, then commits — or, for a configurable share of transactions, rolls back on purpose after doing
 * everything. A rollback also undoes the seq increment, so the committed seqs of a key are exactly {@code 1..n}.
 * Because the key row is locked before the outbox insert, the outbox order of a key equals its seq order.
 *
 * <p>Serialization failures and deadlocks (SQLState {@code 40001}, {@code 40P01}) are rolled back and the
 * transaction is retried; they are counted as retries, not recorded. Any other failure rolls back, is counted as an
 * error (the first ones are kept, see {@link #errors()}) and the writer goes on.
 *
 * <pre>{@code
 * try (LedgerWriter writer = LedgerWriter.builder(dataSource, "hist_1")
 *         .threads(4).keys(50).events(2_000).rollbackShare(0.05)
 *         .eventInserter((c, id, key, seq) -> outbox.publish(c, …))
 *         .build().start()) {
 *     writer.awaitDone(Duration.ofMinutes(1));
 * }
 * }</pre>
 */
public final class LedgerWriter implements AutoCloseable {

    public static final int DEFAULT_THREADS = 4;
    public static final int DEFAULT_KEYS = 100;
    public static final double DEFAULT_ROLLBACK_SHARE = 0.05;
    public static final int DEFAULT_MAX_ATTEMPTS = 100;
    public static final Duration DEFAULT_STOP_TIMEOUT = Duration.ofSeconds(30);
    /** How many failures {@link #errors()} keeps. */
    public static final int KEPT_ERRORS = 20;

    private static final Logger log = LoggerFactory.getLogger(LedgerWriter.class);

    /** How the events of a transaction with more than one event are chosen. */
    public enum MultiEventMode {
        /** Several seqs of one key (one key lock, {@code seq = seq + m}). */
        SAME_KEY,
        /** One event each for several distinct keys (locked in key order). */
        DISTINCT_KEYS
    }

    /**
     * Counters so far.
     *
     * @param committedTransactions  transactions that committed
     * @param committedEvents        events in them
     * @param rolledBackTransactions transactions rolled back on purpose
     * @param rolledBackEvents       events in them
     * @param retries                attempts rolled back for a serialization failure or deadlock and retried
     * @param errors                 transactions that failed otherwise (their events are in no counter above)
     * @param failedEvents           events of those transactions
     * @param unknownOutcomes        of the errors, those where {@code commit()} itself failed: the ledger tells
     *                               whether they committed
     */
    public record Stats(long committedTransactions, long committedEvents, long rolledBackTransactions,
                        long rolledBackEvents, long retries, long errors, long failedEvents, long unknownOutcomes) {
    }

    private final LedgerWriterConfig config;
    private final List<String> keyNames;
    private final LedgerWriterLoop loop;
    private final AtomicBoolean started = new AtomicBoolean();
    private final AtomicBoolean closed = new AtomicBoolean();
    private final List<Thread> threads = new ArrayList<>();
    private volatile CountDownLatch finished = new CountDownLatch(0);

    private LedgerWriter(LedgerWriterConfig config) {
        this.config = config;
        List<String> names = new ArrayList<>(config.keys());
        for (int i = 1; i <= config.keys(); i++) {
            names.add(Ledger.keyName(i));
        }
        this.keyNames = List.copyOf(names);
        this.loop = new LedgerWriterLoop(config, keyNames);
    }

    public static Builder builder(DataSource dataSource, String schema) {
        return new Builder(dataSource, schema);
    }

    /** Creates the ledger tables if needed and starts the writer threads. Returns {@code this}. */
    public LedgerWriter start() {
        if (!started.compareAndSet(false, true)) {
            throw new IllegalStateException("ledger writer already started");
        }
        Ledger.create(config.dataSource(), config.schema(), config.keys());
        log.info("ledger-writer: schema={} threads={} keys={} events={} duration={} rollbackShare={} "
                        + "eventsPerTransaction={} mode={} targetRate={}/s",
                config.schema(), config.threads(), config.keys(), config.events() < 0 ? "unbounded" : config.events(),
                config.duration(), config.rollbackShare(), config.eventsPerTransaction(), config.mode(),
                config.targetRate() > 0 ? config.targetRate() : "max");
        finished = new CountDownLatch(config.threads());
        loop.begin();
        for (int i = 0; i < config.threads(); i++) {
            int writer = i;
            Thread thread = new Thread(() -> loop.run(writer, finished), "txoutbox-ledger-writer-" + i);
            thread.setDaemon(true);
            threads.add(thread);
        }
        threads.forEach(Thread::start);
        return this;
    }

    /** Waits until every writer finished (count reached, duration over, or stopped). */
    public boolean awaitDone(Duration timeout) throws InterruptedException {
        return finished.await(timeout.toNanos(), TimeUnit.NANOSECONDS);
    }

    public boolean isDone() {
        return started.get() && finished.getCount() == 0;
    }

    /**
     * Asks the writers to stop after their current transaction and waits for them (bounded by the stop timeout,
     * then interrupts them). Idempotent.
     */
    public void stop() {
        loop.requestStop();
        threads.forEach(LockSupport::unpark);
        boolean interrupted = false;
        try {
            if (!finished.await(config.stopTimeout().toNanos(), TimeUnit.NANOSECONDS)) {
                log.warn("ledger-writer: writers did not stop within {}, interrupting", config.stopTimeout());
                threads.forEach(Thread::interrupt);
                finished.await(config.stopTimeout().toNanos(), TimeUnit.NANOSECONDS);
            }
        } catch (InterruptedException e) {
            interrupted = true;
        } finally {
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
    }

    @Override
    public void close() {
        if (closed.compareAndSet(false, true)) {
            stop();
        }
    }

    public Stats stats() {
        return loop.stats();
    }

    /** Ids of the events rolled back on purpose (never to be delivered). */
    public List<UUID> rolledBackEventIds() {
        return loop.rolledBackEventIds();
    }

    /** The first {@link #KEPT_ERRORS} failures (not counting retried serialization failures). */
    public List<Throwable> errors() {
        return loop.errors();
    }

    /** The keys written, {@code k-0001} … */
    public List<String> keyNames() {
        return keyNames;
    }

    public String schema() {
        return config.schema();
    }

    /** Builds a {@link LedgerWriter}; every setter validates and names the property it rejects. */
    public static final class Builder {
        private final DataSource dataSource;
        private final String schema;
        private int threads = DEFAULT_THREADS;
        private int keys = DEFAULT_KEYS;
        private long events = -1;
        private Duration duration;
        private double rollbackShare = DEFAULT_ROLLBACK_SHARE;
        private int eventsPerTransaction = 1;
        private MultiEventMode mode = MultiEventMode.SAME_KEY;
        private double targetRate;
        private EventInserter inserter = EventInserter.none();
        private CommitListener commitListener;
        private long seed = 1;
        private Supplier<UUID> eventIds = UuidV7::next;
        private int maxAttempts = DEFAULT_MAX_ATTEMPTS;
        private Duration stopTimeout = DEFAULT_STOP_TIMEOUT;

        private Builder(DataSource dataSource, String schema) {
            this.dataSource = Objects.requireNonNull(dataSource, "ledgerWriter.dataSource");
            Ledger.quote(schema);
            this.schema = schema;
        }

        public Builder threads(int threads) {
            this.threads = atLeastOne("threads", threads);
            return this;
        }

        /** Number of keys {@code k-0001 …}; events pick one uniformly at random. */
        public Builder keys(int keys) {
            this.keys = atLeastOne("keys", keys);
            return this;
        }

        /**
         * Total events to attempt, committed plus rolled back on purpose (retried attempts do not count). Without
         * it (and without {@link #duration}) the writers run until {@link #stop()}.
         */
        public Builder events(long events) {
            if (events < 1) {
                throw new IllegalArgumentException("ledgerWriter.events must be >= 1, was " + events);
            }
            this.events = events;
            return this;
        }

        /** Stop starting transactions after this long (also with {@link #events}: whichever comes first). */
        public Builder duration(Duration duration) {
            if (duration == null || duration.isNegative() || duration.isZero()) {
                throw new IllegalArgumentException("ledgerWriter.duration must be > 0, was " + duration);
            }
            this.duration = duration;
            return this;
        }

        /** Share of transactions, 0..1, rolled back on purpose after writing everything. */
        public Builder rollbackShare(double share) {
            if (!(share >= 0 && share <= 1)) {
                throw new IllegalArgumentException("ledgerWriter.rollbackShare must be in [0, 1], was " + share);
            }
            this.rollbackShare = share;
            return this;
        }

        public Builder eventsPerTransaction(int count) {
            this.eventsPerTransaction = atLeastOne("eventsPerTransaction", count);
            return this;
        }

        public Builder multiEventMode(MultiEventMode mode) {
            this.mode = Objects.requireNonNull(mode, "ledgerWriter.multiEventMode");
            return this;
        }

        /**
         * Open-loop target rate in events per second over all writers: transaction {@code i} is due at a fixed
         * slot whether or not earlier ones finished. 0 (the default) = as fast as possible.
         */
        public Builder targetRate(double eventsPerSecond) {
            if (!(eventsPerSecond >= 0) || Double.isInfinite(eventsPerSecond)) {
                throw new IllegalArgumentException("ledgerWriter.targetRate must be >= 0, was " + eventsPerSecond);
            }
            this.targetRate = eventsPerSecond;
            return this;
        }

        public Builder eventInserter(EventInserter inserter) {
            this.inserter = Objects.requireNonNull(inserter, "ledgerWriter.eventInserter");
            return this;
        }

        public Builder onCommit(CommitListener listener) {
            this.commitListener = listener;
            return this;
        }

        /** Seed of the key and rollback choices (per writer thread). */
        public Builder seed(long seed) {
            this.seed = seed;
            return this;
        }

        /** Where event ids come from; default: time-ordered UUIDv7. */
        public Builder eventIds(Supplier<UUID> eventIds) {
            this.eventIds = Objects.requireNonNull(eventIds, "ledgerWriter.eventIds");
            return this;
        }

        /** Attempts per transaction when serialization failures or deadlocks repeat. */
        public Builder maxAttempts(int maxAttempts) {
            this.maxAttempts = atLeastOne("maxAttempts", maxAttempts);
            return this;
        }

        public Builder stopTimeout(Duration stopTimeout) {
            if (stopTimeout == null || stopTimeout.isNegative()) {
                throw new IllegalArgumentException("ledgerWriter.stopTimeout must be >= 0, was " + stopTimeout);
            }
            this.stopTimeout = stopTimeout;
            return this;
        }

        public LedgerWriter build() {
            if (mode == MultiEventMode.DISTINCT_KEYS && eventsPerTransaction > keys) {
                throw new IllegalArgumentException("ledgerWriter.eventsPerTransaction must be <= keys ("
                        + keys + ") with DISTINCT_KEYS, was " + eventsPerTransaction);
            }
            return new LedgerWriter(new LedgerWriterConfig(dataSource, schema, threads, keys, events, duration,
                    rollbackShare, eventsPerTransaction, mode, targetRate, inserter, commitListener, seed, eventIds,
                    maxAttempts, stopTimeout));
        }

        private static int atLeastOne(String property, int value) {
            if (value < 1) {
                throw new IllegalArgumentException("ledgerWriter." + property + " must be >= 1, was " + value);
            }
            return value;
        }
    }
}
