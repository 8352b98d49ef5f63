package io.txoutbox.internal.retention;

import io.txoutbox.InboxAdmin;
import io.txoutbox.OutboxGrants;
import io.txoutbox.OutboxException;
import io.txoutbox.OutboxRetention;
import io.txoutbox.internal.Privileges;
import io.txoutbox.internal.ReadCommitted;
import io.txoutbox.internal.SqlErrors;
import io.txoutbox.internal.partition.PartitionedOutbox;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantLock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Batched retention of published outbox rows by {@code id} ranges; see {@link OutboxRetention} for the contract.
 *
 * <p>Each range is one transaction of two statements: a probe that finds the first row at or above the walk's
 * position (so that the walk skips the already-emptied head of the table in growing steps instead of id by id) and
 * the first row created after the cutoff (the end of the walk), then the DELETE of the range. Both select by
 * {@code id} bounds, which the BRIN index on {@code id} answers with the pages of that range only.
 */
public final class DefaultOutboxRetention implements OutboxRetention {

    private static final Logger log = LoggerFactory.getLogger(DefaultOutboxRetention.class);
    private static final AtomicInteger INSTANCES = new AtomicInteger();
    /** The probe's window grows over empty ranges up to this many batch sizes. */
    private static final int MAX_PROBE_BATCHES = 64;
    static final String APPLICATION_NAME = "txoutbox-retention";
    /** Parked, dead and discarded rows moved out of one expired partition at most (in its drop transaction). */
    static final int MAX_MOVED_ROWS = 10_000;

    private final Config config;
    private final String table;
    /** What the walk deletes from: the table, or the default partition of a partitioned one. */
    private final String walked;
    private final PartitionedOutbox partitioned;
    private final String probe;
    private final String delete;
    private final ReentrantLock runLock = new ReentrantLock();
    private final AtomicBoolean started = new AtomicBoolean();
    private final AtomicBoolean closed = new AtomicBoolean();
    private final AtomicLong runs = new AtomicLong();
    private final AtomicLong failedRuns = new AtomicLong();
    private final AtomicLong deletedTotal = new AtomicLong();
    private volatile ScheduledExecutorService executor;
    private volatile boolean warnedSummarize;

    public DefaultOutboxRetention(Config config) {
        this.config = config;
        this.table = config.schema().qualifiedOutboxTable();
        this.partitioned = config.schema().isPartitioned() ? new PartitionedOutbox(config.schema()) : null;
        this.walked = partitioned == null ? table : partitioned.qualifiedDefaultPartition();
        this.probe = "SELECT min(id), min(id) FILTER (WHERE created_at >= ?) FROM " + walked
                + " WHERE id >= ? AND id < ?";
        this.delete = "DELETE FROM " + walked + " WHERE id >= ? AND id < ? AND state = 'PUBLISHED'"
                + " AND published_at < ?";
    }

    @Override
    public Result runOnce() {
        return deleteOlderThan(config.clock().instant().minus(config.retention()));
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
            Walk walk = walk(cutoff);
            if (walk.anotherRunActive) {
                log.info("txoutbox-retention: another session is running the retention of {}; skipped this run",
                        config.schema());
                return new Result(cutoff, 0, 0, 0, 0, null, null, true);
            }
            InboxAdmin.Purged inbox = null;
            if (config.processedEventRetention() != null && !closed.get()) {
                inbox = InboxAdmin.create(config.dataSource(), config.schema())
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

    private static final class Walk {
        long deleted;
        int batches;
        int largestBatch;
        int failedBatches;
        Partitions partitions;
        boolean anotherRunActive;
    }

    private Walk walk(Instant cutoff) {
        Walk walk = new Walk();
        var cutoffTs = cutoff.atOffset(ZoneOffset.UTC);
        int batchSize = config.batchSize();
        try (Connection c = ReadCommitted.open(config.dataSource())) {
            boolean autoCommit = c.getAutoCommit();
            c.setAutoCommit(false);
            try {
                if (!tryRunLock(c)) {
                    walk.anotherRunActive = true;
                    return walk;
                }
                try {
                    walkLocked(c, walk, cutoffTs, batchSize);
                } finally {
                    unlockRun(c);
                }
                return walk;
            } finally {
                try {
                    c.setAutoCommit(autoCommit);
                } catch (SQLException ignored) {
                    // the connection is broken; the pool will find out
                }
            }
        } catch (SQLException e) {
            throw new OutboxException("retention of " + config.schema() + " failed after deleting " + walk.deleted
                    + " rows: " + e.getMessage() + " (SQLState " + e.getSQLState() + "); the next run goes on",
                    e, SqlErrors.isRetriable(e));
        }
    }

    /**
     * The advisory lock of one table's retention, held by a run's session: of several instances running retention
     * on one table (one per service replica, say), one walks it at a time and the others skip their run instead of
     * waiting on the same rows. Two-int keys: "txrt" and the table's CRC (the relay's locks use the one-bigint form).
     */
    public static int[] runLockKey(io.txoutbox.OutboxSchema schema) {
        java.util.zip.CRC32 crc = new java.util.zip.CRC32();
        crc.update((schema.schema() + "." + schema.outboxTable()).getBytes(java.nio.charset.StandardCharsets.UTF_8));
        return new int[] {0x74787274, (int) crc.getValue()};
    }

    private boolean tryRunLock(Connection c) throws SQLException {
        int[] key = runLockKey(config.schema());
        try (PreparedStatement ps = c.prepareStatement("SELECT pg_try_advisory_lock(?, ?)")) {
            ps.setInt(1, key[0]);
            ps.setInt(2, key[1]);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                boolean got = rs.getBoolean(1);
                c.commit();
                return got;
            }
        }
    }

    private void unlockRun(Connection c) {
        int[] key = runLockKey(config.schema());
        try (PreparedStatement ps = c.prepareStatement("SELECT pg_advisory_unlock(?, ?)")) {
            rollbackQuietly(c);
            ps.setInt(1, key[0]);
            ps.setInt(2, key[1]);
            ps.execute();
            c.commit();
        } catch (SQLException e) {
            // a broken session has released its locks already
            log.debug("txoutbox-retention: unlock failed: {}", e.toString());
        }
    }

    private void walkLocked(Connection c, Walk walk, java.time.OffsetDateTime cutoffTs, int batchSize)
            throws SQLException {
        if (partitioned != null) {
            walk.partitions = maintainPartitions(c, cutoffTs.toInstant());
        } else if (PartitionedOutbox.isPartitioned(c, config.schema())) {
            c.commit();
            throw new OutboxException("the outbox table " + config.schema() + " is partitioned: configure the"
                    + " schema with OutboxSchema.builder().partitioned(...) so retention drops old partitions instead"
                    + " of deleting rows", null, false);
        }
        c.commit();
        summarizeNewPages(c);
        long[] bounds = idBounds(c);
        if (bounds == null) {
            return;
        }
        long pos = bounds[0];
        long top = bounds[1];
        boolean idsInTimeOrder = bounds[2] == 1;
        long window = batchSize;
        try (PreparedStatement p = c.prepareStatement(probe);
                PreparedStatement d = c.prepareStatement(delete)) {
            while (pos <= top && !closed.get() && !Thread.currentThread().isInterrupted()) {
                long[] found;
                int n;
                long from;
                long to = saturatedAdd(pos, window);
                try {
                    limitTransaction(c);
                    p.setObject(1, cutoffTs);
                    p.setLong(2, pos);
                    p.setLong(3, saturatedAdd(pos, window));
                    found = firstRows(p);
                    if (found == null) {
                        c.commit();
                        pos = saturatedAdd(pos, window);
                        window = Math.min(window * 2, (long) batchSize * MAX_PROBE_BATCHES);
                        continue;
                    }
                    if (idsInTimeOrder && found[1] != Long.MIN_VALUE) {
                        // created after the cutoff: this row and every later id were drawn after it
                        top = Math.min(top, found[1] - 1);
                    }
                    from = found[0];
                    if (from > top) {
                        c.commit();
                        break;
                    }
                    to = Math.min(saturatedAdd(from, batchSize), saturatedAdd(top, 1));
                    d.setLong(1, from);
                    d.setLong(2, to);
                    d.setObject(3, cutoffTs);
                    n = d.executeUpdate();
                    c.commit();
                } catch (SQLException e) {
                    rollbackQuietly(c);
                    if (!skippable(e)) {
                        throw e;
                    }
                    walk.failedBatches++;
                    log.warn("txoutbox-retention: batch at id {} of {} left for the next run: {} (SQLState {})",
                            pos, config.schema(), e.getMessage(), e.getSQLState());
                    pos = to;
                    window = batchSize;
                    continue;
                }
                walk.batches++;
                walk.deleted += n;
                walk.largestBatch = Math.max(walk.largestBatch, n);
                pos = to;
                window = batchSize;
                if (n > 0) {
                    pause();
                }
            }
        }
    }

    /**
     * Partition mode: partitions created ahead, expired ones dropped; the walk that follows deletes only from the
     * default partition (rows that no period covered), which is normally empty of published rows.
     */
    private Partitions maintainPartitions(Connection c, Instant cutoff) throws SQLException {
        Partitions r = partitioned.maintain(c, config.clock().instant(), cutoff, config.lockTimeout(), MAX_MOVED_ROWS);
        if (!r.created().isEmpty() || !r.dropped().isEmpty()) {
            log.info("txoutbox-retention: partitions of {}: created {}, dropped {}{}", config.schema(), r.created(),
                    r.dropped(), r.rowsMoved() == 0 ? "" : ", " + r.rowsMoved() + " parked/dead/discarded rows moved"
                            + " to " + partitioned.defaultPartition());
        }
        r.kept().forEach(reason -> log.warn("txoutbox-retention: {}", reason));
        return r;
    }

    /**
     * Summarizes the BRIN index's new page ranges once per run: an unsummarized range matches every id-range query,
     * so without this each batch would also read the whole tail of the table written since the last vacuum
     * (measured: 11,500 pages instead of 256 for a 5,000-id range of a 500,000-row table). Needs the index's owner
     * and waits for no autovacuum: when it cannot, the run goes on and autovacuum ({@code autosummarize}) does it.
     */
    private void summarizeNewPages(Connection c) throws SQLException {
        try {
            limitTransaction(c);
            try (PreparedStatement ps = c.prepareStatement("SELECT i.indexrelid::regclass::text,"
                    + " brin_summarize_new_values(i.indexrelid) FROM pg_index i JOIN pg_class ic ON ic.oid ="
                    + " i.indexrelid JOIN pg_am am ON am.oid = ic.relam WHERE i.indrelid = ?::regclass"
                    + " AND am.amname = 'brin'")) {
                ps.setString(1, walked);
                try (ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) {
                        log.debug("txoutbox-retention: summarized {} new page ranges of {}", rs.getLong(2),
                                rs.getString(1));
                    }
                }
            }
            c.commit();
        } catch (SQLException e) {
            rollbackQuietly(c);
            if (!warnedSummarize) {
                warnedSummarize = true;
                log.info("txoutbox-retention: could not summarize the BRIN index of {} ({}, SQLState {}); batches"
                        + " may read more pages until autovacuum summarizes it", walked, e.getMessage(),
                        e.getSQLState());
            }
        }
    }

    /**
     * The first id the sequence hands out, its last one (nothing above it exists yet) and whether ids are drawn in
     * time order (a sequence {@code CACHE} above 1 hands ranges to sessions: then the walk cannot stop early).
     * {@code null} when no id was drawn yet.
     */
    private long[] idBounds(Connection c) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("SELECT s.seqmin, pg_sequence_last_value(s.seqrelid),"
                + " s.seqcache FROM pg_sequence s WHERE s.seqrelid = pg_get_serial_sequence(?, 'id')::regclass")) {
            ps.setString(1, table);
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next()) {
                    throw new OutboxException("the outbox table " + config.schema() + " has no id sequence: is it"
                            + " a txoutbox table? Run OutboxSchema.migrate first", null, false);
                }
                long min = rs.getLong(1);
                long last = rs.getLong(2);
                boolean never = rs.wasNull();
                long cache = rs.getLong(3);
                c.commit();
                return never ? null : new long[] {min, last, cache == 1 ? 1 : 0};
            }
        }
    }

    private void limitTransaction(Connection c) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("SELECT set_config('lock_timeout', ?, true),"
                + " set_config('statement_timeout', ?, true), set_config('plan_cache_mode', 'force_custom_plan',"
                + " true), set_config('application_name', ?, true)")) {
            ps.setString(1, config.lockTimeout().toMillis() + "ms");
            ps.setString(2, config.statementTimeout().toMillis() + "ms");
            ps.setString(3, APPLICATION_NAME);
            ps.execute();
        }
    }

    /** {min id, min id created at or after the cutoff (MIN_VALUE if none)}, or null for an empty window. */
    private static long[] firstRows(PreparedStatement p) throws SQLException {
        try (ResultSet rs = p.executeQuery()) {
            rs.next();
            long first = rs.getLong(1);
            if (rs.wasNull()) {
                return null;
            }
            long late = rs.getLong(2);
            return new long[] {first, rs.wasNull() ? Long.MIN_VALUE : late};
        }
    }

    /** A lock or statement timeout, a deadlock or a serialization failure: the range waits for the next run. */
    private static boolean skippable(SQLException e) {
        String state = e.getSQLState();
        return state != null && (state.equals("55P03") || state.equals("57014") || state.startsWith("40"));
    }

    private void pause() {
        long ms = config.pauseBetweenBatches().toMillis();
        if (ms <= 0) {
            return;
        }
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private static long saturatedAdd(long a, long b) {
        long r = a + b;
        return ((a ^ r) & (b ^ r)) < 0 ? Long.MAX_VALUE : r;
    }

    private static void rollbackQuietly(Connection c) {
        try {
            c.rollback();
        } catch (SQLException ignored) {
            // the original failure is reported
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
        Privileges.requireAtStart(config.dataSource(), config.schema(), "retention", log, components());
        if (!started.compareAndSet(false, true)) {
            return this;
        }
        int instance = INSTANCES.incrementAndGet();
        executor = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "txoutbox-retention-" + instance);
            t.setDaemon(true);
            return t;
        });
        log.info("txoutbox-retention: started for {}: retention {}, batchSize {}, pause {}, interval {}, lockTimeout {},"
                + " statementTimeout {}{}", config.schema(), config.retention(), config.batchSize(),
                config.pauseBetweenBatches(), config.interval(), config.lockTimeout(), config.statementTimeout(),
                config.processedEventRetention() == null ? "" : ", inbox: processed_event "
                        + config.processedEventRetention() + ", inbox_event " + config.inboxRetention());
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
        try (Connection c = ReadCommitted.open(config.dataSource())) {
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
