package io.txoutbox.internal.retention;

import io.txoutbox.OutboxException;
import io.txoutbox.OutboxRetention.Partitions;
import io.txoutbox.RetentionConfig;
import io.txoutbox.internal.pg.ReadCommitted;
import io.txoutbox.internal.partition.PartitionedOutbox;
import io.txoutbox.internal.pg.AdvisoryLocks;
import io.txoutbox.internal.pg.IdSequence;
import io.txoutbox.internal.pg.Jdbc;
import io.txoutbox.internal.pg.PgErrors;
import io.txoutbox.internal.pg.RetentionStatements;
import io.txoutbox.internal.progress.ProgressModel;
import io.txoutbox.internal.progress.ProgressModels;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Clock;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.function.BooleanSupplier;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One retention run's walk over a table by {@code id} ranges, on one session that holds the table's retention lock.
 *
 * <p>Each range is one transaction of two statements: a probe that finds the first row at or above the walk's
 * position (so that the walk skips the already-emptied head of the table in growing steps instead of id by id) and
 * the first row created after the cutoff (the end of the walk), then the DELETE of the range. Both select by
 * {@code id} bounds, which the BRIN index on {@code id} answers with the pages of that range only.
 */
final class RetentionWalk {

    private static final Logger log = LoggerFactory.getLogger(DefaultOutboxRetention.class);
    /** The probe's window grows over empty ranges up to this many batch sizes. */
    private static final int MAX_PROBE_BATCHES = 64;

    private final DataSource dataSource;
    private final Clock clock;
    private final RetentionConfig config;
    /** What the walk deletes from: the table, or the default partition of a partitioned one. */
    private final String walked;
    private final PartitionedOutbox partitioned;
    private final RetentionStatements statements;
    private final AdvisoryLocks.Key runLock;
    /** The job was closed: the walk stops between ranges. */
    private final BooleanSupplier closed;
    private volatile boolean warnedSummarize;

    RetentionWalk(DataSource dataSource, Clock clock, RetentionConfig config, PartitionedOutbox partitioned,
            BooleanSupplier closed) {
        this.dataSource = dataSource;
        this.clock = clock;
        this.config = config;
        this.partitioned = partitioned;
        this.walked = partitioned == null ? config.schema().qualifiedOutboxTable()
                : partitioned.qualifiedDefaultPartition();
        ProgressModel progress = ProgressModels.of(config.schema());
        this.statements = new RetentionStatements(walked, progress.published(null), progress.publishedAt(null));
        this.runLock = AdvisoryLocks.retention(config.schema());
        this.closed = closed;
    }

    /** What one walk did. */
    static final class Walk {
        long deleted;
        int batches;
        int largestBatch;
        int failedBatches;
        Partitions partitions;
        boolean anotherRunActive;
    }

    Walk run(Instant cutoff) {
        Walk walk = new Walk();
        var cutoffTs = cutoff.atOffset(ZoneOffset.UTC);
        int batchSize = config.batchSize();
        try (Connection c = ReadCommitted.open(dataSource)) {
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
                    e, PgErrors.isRetriable(e));
        }
    }

    /**
     * The advisory lock of one table's retention ({@link AdvisoryLocks#retention}), held by a run's session: of
     * several instances running retention on one table (one per service replica, say), one walks it at a time and
     * the others skip their run instead of waiting on the same rows.
     */
    private boolean tryRunLock(Connection c) throws SQLException {
        boolean got = runLock.tryLock(c);
        c.commit();
        return got;
    }

    private void unlockRun(Connection c) {
        try {
            Jdbc.rollbackQuietly(c);
            runLock.unlock(c);
            c.commit();
        } catch (SQLException e) {
            // a broken session has released its locks already
            log.debug("txoutbox-retention: unlock failed: {}", e.toString());
        }
    }

    private void walkLocked(Connection c, Walk walk, OffsetDateTime cutoffTs, int batchSize) throws SQLException {
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
        try (PreparedStatement p = c.prepareStatement(statements.probe());
                PreparedStatement d = c.prepareStatement(statements.delete())) {
            while (pos <= top && !closed.getAsBoolean() && !Thread.currentThread().isInterrupted()) {
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
                    Jdbc.rollbackQuietly(c);
                    // a lock or statement timeout, a deadlock or a serialization failure: the range waits
                    if (!PgErrors.isContention(e)) {
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
        Partitions r = partitioned.maintain(c, clock.instant(), cutoff, config.lockTimeout(),
                DefaultOutboxRetention.MAX_MOVED_ROWS);
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
     * (many times the pages of the range: BENCHMARKS.md, "Figures moved out of the code and the docs"). Needs the
     * index's owner and waits for no autovacuum: when it cannot, the run goes on and autovacuum
     * ({@code autosummarize}) does it.
     */
    private void summarizeNewPages(Connection c) throws SQLException {
        try {
            limitTransaction(c);
            try (PreparedStatement ps = c.prepareStatement(RetentionStatements.summarizeBrin())) {
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
            Jdbc.rollbackQuietly(c);
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
        IdSequence.Bounds s = IdSequence.bounds(c, config.schema().qualifiedOutboxTable());
        if (s == null) {
            throw new OutboxException("the outbox table " + config.schema() + " has no id sequence: is it"
                    + " a txoutbox table? Run OutboxSchema.migrate first", null, false);
        }
        c.commit();
        return s.last() == null ? null : new long[] {s.min(), s.last(), s.cache() == 1 ? 1 : 0};
    }

    private void limitTransaction(Connection c) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(RetentionStatements.limitTransaction())) {
            ps.setString(1, config.lockTimeout().toMillis() + "ms");
            ps.setString(2, config.statementTimeout().toMillis() + "ms");
            ps.setString(3, DefaultOutboxRetention.APPLICATION_NAME);
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
}
