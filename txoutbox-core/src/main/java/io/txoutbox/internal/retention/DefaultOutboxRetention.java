package io.txoutbox.internal.retention;

import io.txoutbox.InboxAdmin;
import io.txoutbox.OutboxGrants;
import io.txoutbox.OutboxRetention;
import io.txoutbox.RetentionConfig;
import io.txoutbox.internal.Privileges;
import io.txoutbox.internal.pg.ReadCommitted;
import io.txoutbox.internal.partition.PartitionedOutbox;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Clock;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantLock;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Batched retention of published outbox rows by {@code id} ranges; see {@link OutboxRetention} for the contract. A
 * run is one {@link RetentionWalk} (the ranges, on one session); this class schedules the runs and keeps the counts.
 */
public final class DefaultOutboxRetention implements OutboxRetention {

    private static final Logger log = LoggerFactory.getLogger(DefaultOutboxRetention.class);
    private static final AtomicInteger INSTANCES = new AtomicInteger();
    static final String APPLICATION_NAME = "txoutbox-retention";
    /** Parked, dead and discarded rows moved out of one expired partition at most (in its drop transaction). */
    static final int MAX_MOVED_ROWS = 10_000;

    private final DataSource dataSource;
    private final Clock clock;
    private final RetentionConfig config;
    private final PartitionedOutbox partitioned;
    private final RetentionWalk walker;
    private final ReentrantLock runLock = new ReentrantLock();
    private final AtomicBoolean started = new AtomicBoolean();
    private final AtomicBoolean closed = new AtomicBoolean();
    private final AtomicLong runs = new AtomicLong();
    private final AtomicLong failedRuns = new AtomicLong();
    private final AtomicLong deletedTotal = new AtomicLong();
    private volatile ScheduledExecutorService executor;

    public DefaultOutboxRetention(DataSource dataSource, Clock clock, RetentionConfig config) {
        this.dataSource = dataSource;
        this.clock = clock;
        this.config = config;
        this.partitioned = config.schema().isPartitioned() ? new PartitionedOutbox(config.schema()) : null;
        this.walker = new RetentionWalk(dataSource, clock, config, partitioned, closed::get);
    }

    @Override
    public RetentionConfig config() {
        return config;
    }

    @Override
    public Result runOnce() {
        return deleteOlderThan(clock.instant().minus(config.retention()));
    }

    @Override
    public Result deleteOlderThan(Instant cutoff) {
        if (cutoff == null) {
            throw new IllegalArgumentException("cutoff must not be null");
        }
        if (closed.get()) {
            throw new IllegalStateException("this retention job was closed; build a new one to run again");
        }
        runLock.lock();
        try {
            runs.incrementAndGet();
            long t0 = System.nanoTime();
            RetentionWalk.Walk walk = walker.run(cutoff);
            if (walk.anotherRunActive) {
                log.info("txoutbox-retention: another session is running the retention of {}; skipped this run",
                        config.schema());
                return new Result(cutoff, 0, 0, 0, 0, null, null, true);
            }
            InboxAdmin.Purged inbox = null;
            if (config.processedEventRetention() != null && !closed.get()) {
                inbox = InboxAdmin.create(dataSource, config.schema())
                        .purge(config.processedEventRetention(), config.inboxRetention(), config.batchSize());
            }
            deletedTotal.addAndGet(walk.deleted);
            Result result = new Result(cutoff, walk.deleted, walk.batches, walk.largestBatch, walk.failedBatches,
                    walk.partitions, inbox, false);
            log.info("txoutbox-retention: deleted {} published rows of {} published before {} in {} batches"
                    + " ({} left for the next run) in {} ms", walk.deleted, config.schema(), cutoff, walk.batches,
                    walk.failedBatches, (System.nanoTime() - t0) / 1_000_000);
            return result;
        } catch (RuntimeException e) {
            failedRuns.incrementAndGet();
            throw e;
        } finally {
            runLock.unlock();
        }
    }

    @Override
    public OutboxRetention start() {
        if (closed.get()) {
            throw new IllegalStateException("this retention job was closed; build a new one");
        }
        if (started.get()) {
            return this;
        }
        Privileges.requireAtStart(dataSource, config.schema(), "retention", log, components());
        if (!started.compareAndSet(false, true)) {
            return this;
        }
        int instance = INSTANCES.incrementAndGet();
        executor = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "txoutbox-retention-" + instance);
            t.setDaemon(true);
            return t;
        });
        log.info("txoutbox-retention: started for {} with {}", config.schema(),
                RetentionConfig.DESCRIPTOR.describe(config));
        executor.scheduleWithFixedDelay(this::runInBackground, 0, config.interval().toMillis(),
                TimeUnit.MILLISECONDS);
        return this;
    }

    /** The grants this job needs; a partitioned table needs its owner, which the drops themselves check. */
    private List<OutboxGrants.Component> components() {
        List<OutboxGrants.Component> out = new ArrayList<>();
        if (partitioned == null) {
            out.add(OutboxGrants.Component.RETENTION);
        }
        if (config.processedEventRetention() != null) {
            out.add(OutboxGrants.Component.INBOX_RETENTION);
        }
        return out;
    }

    private List<String> missingPrivileges() throws SQLException {
        List<String> missing = new ArrayList<>();
        try (Connection c = ReadCommitted.open(dataSource)) {
            for (OutboxGrants.Component component : components()) {
                missing.addAll(Privileges.missing(c, config.schema(), component));
            }
        }
        return missing;
    }

    private void runInBackground() {
        try {
            runOnce();
        } catch (Throwable e) {
            if (Privileges.isDenied(e)) {
                // every later run would fail the same way: stop, once, with the grants to add
                List<String> missing = List.of();
                try {
                    missing = missingPrivileges();
                } catch (SQLException | RuntimeException ignored) {
                    // the message below says what to read instead
                }
                log.error("txoutbox-retention: {}", missing.isEmpty()
                        ? "stopped for " + config.schema() + ": " + e.getMessage() + " (SQLState 42501); see "
                                + "OutboxGrants for what the role needs"
                        : Privileges.message("retention stopped", config.schema(), components().isEmpty()
                                ? OutboxGrants.Component.MIGRATION_OWNER : components().get(0), missing));
                executor.shutdown();
                return;
            }
            // counted in runOnce; the job goes on at the next interval
            log.error("txoutbox-retention: run for {} failed, next run in {}: {}", config.schema(),
                    config.interval(), e.toString(), e);
        }
    }

    @Override
    public Stats stats() {
        return new Stats(runs.get(), failedRuns.get(), deletedTotal.get());
    }

    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        ScheduledExecutorService ex = executor;
        if (ex == null) {
            return;
        }
        ex.shutdown();
        try {
            if (!ex.awaitTermination(config.closeTimeout().toMillis(), TimeUnit.MILLISECONDS)) {
                ex.shutdownNow();
                log.warn("txoutbox-retention: run did not stop within {}; interrupted", config.closeTimeout());
            }
        } catch (InterruptedException e) {
            ex.shutdownNow();
            Thread.currentThread().interrupt();
        }
        log.info("txoutbox-retention: stopped for {}", config.schema());
    }
}
