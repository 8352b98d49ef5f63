package io.txoutbox.internal.partition;

import io.txoutbox.OutboxException;
import io.txoutbox.OutboxPartitioning;
import io.txoutbox.OutboxRetention;
import io.txoutbox.OutboxSchema;
import io.txoutbox.internal.pg.Jdbc;
import io.txoutbox.internal.pg.PartitionStatements;
import io.txoutbox.internal.pg.PgErrors;
import io.txoutbox.internal.progress.ProgressModels;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The time-partitioned outbox table: {@code PARTITION BY RANGE (event_id)}, one partition per period, a default
 * partition, and the partition that holds the rows of the table it was converted from.
 *
 * <p>Why by {@code event_id}: PostgreSQL requires the partition key in every unique constraint, and the outbox's
 * primary key is {@code event_id} alone. A UUIDv7 begins with its creation time in milliseconds and PostgreSQL
 * compares UUIDs byte by byte, so the ids of a period lie between {@code <start ms>0000-0000-0000-000000000000} and
 * the next period's start.
 *
 * <p>Locks, measured on PostgreSQL 15: {@code CREATE TABLE ... PARTITION OF} and {@code DETACH PARTITION} take an
 * ACCESS EXCLUSIVE lock on the parent (writers wait), {@code ATTACH PARTITION} only SHARE UPDATE EXCLUSIVE (writers
 * go on). So a new partition is created as a plain table and attached; a drop detaches under a short
 * {@code lock_timeout} and is retried by the next run when it cannot get the lock. {@code DETACH CONCURRENTLY}
 * would avoid the wait but is not allowed next to a default partition, and the default partition is what keeps
 * writes from ever failing at a boundary.
 */
public final class PartitionedOutbox {

    private static final Logger log = LoggerFactory.getLogger(PartitionedOutbox.class);
    private final OutboxSchema schema;
    private final OutboxPartitioning partitioning;
    private final String parent;
    private final String table;
    private final PartitionStatements statements;

    public PartitionedOutbox(OutboxSchema schema) {
        if (schema.partitioning() == null) {
            throw new IllegalArgumentException(schema + " is not configured as partitioned");
        }
        this.schema = schema;
        this.partitioning = schema.partitioning();
        this.parent = schema.qualifiedOutboxTable();
        this.table = schema.outboxTable();
        this.statements = new PartitionStatements(schema, ProgressModels.of(schema).pending(null));
    }

    /** One partition: its range of event ids ({@code null}: MINVALUE / MAXVALUE), or the default partition. */
    public record Partition(String name, UUID from, UUID to, boolean isDefault) {

        boolean overlaps(UUID start, UUID end) {
            return !isDefault && PartitionBounds.overlaps(from, to, start, end);
        }

        /** Whether its whole range ended at or before {@code cutoff}. */
        boolean endedBy(Instant cutoff) {
            return !isDefault && PartitionBounds.endedBy(to, cutoff);
        }
    }

    /** The lowest event id of a UUIDv7 made at {@code t}: the bound of the partition that starts at {@code t}. */
    public static UUID bound(Instant t) {
        return PartitionBounds.bound(t);
    }

    /** Compares as PostgreSQL does: unsigned, byte by byte. */
    public static int compare(UUID a, UUID b) {
        return PartitionBounds.compare(a, b);
    }

    public String defaultPartition() {
        return table + "_default";
    }

    public String qualifiedDefaultPartition() {
        return statements.qualified(defaultPartition());
    }

    /** Whether the outbox table exists and is a partitioned table. */
    public static boolean isPartitioned(Connection c, OutboxSchema schema) throws SQLException {
        return PartitionCatalog.isPartitioned(c, schema);
    }

    /** The partitions, in range order, the default one last. */
    public List<Partition> partitions(Connection c) throws SQLException {
        return PartitionCatalog.partitions(c, parent);
    }

    // ------------------------------------------------------------------------------------------------ conversion

    /**
     * Turns the plain outbox table into a partitioned one, or finishes a conversion that stopped (a partitioned table
     * is left as it is): the existing table becomes the partition {@code <table>_legacy} of all ids before the start
     * of a period at least an hour ahead, without copying its rows, and a default partition is created
     * ({@link #createAhead} makes the periods' partitions). Waits for a conversion another session runs. The steps
     * and why each committed state accepts every INSERT: {@link PartitionConversion}.
     *
     * @return whether this call changed the table
     */
    public boolean convert(Connection c, Instant now) {
        return new PartitionConversion(schema).run(c, now, true);
    }

    /**
     * Finishes a conversion that a failed or killed process left between its steps (relay start, retention): nothing
     * when none was started, or when another session is converting the table right now.
     *
     * @return whether this call changed the table
     */
    public boolean finishConversion(Connection c, Instant now) {
        PartitionConversion conversion = new PartitionConversion(schema);
        try {
            boolean autoCommit = c.getAutoCommit();
            c.setAutoCommit(false);
            try {
                if (!conversion.inProgress(c)) {
                    return false;
                }
            } finally {
                c.setAutoCommit(autoCommit);
            }
        } catch (SQLException e) {
            Jdbc.rollbackQuietly(c);
            throw new OutboxException("reading whether a conversion of " + schema + " is unfinished failed: "
                    + e.getMessage() + " (SQLState " + e.getSQLState() + ")", e, PgErrors.isRetriable(e));
        }
        return conversion.run(c, now, false);
    }

    // ----------------------------------------------------------------------------------------------- maintenance

    /**
     * Creates the partitions of the current period and {@code ahead} after it that do not exist yet, then drops the
     * partitions whose whole range ended at or before {@code cutoff}. A partition with PENDING rows is kept (its
     * events are not published yet); its PARKED, DEAD and DISCARDED rows (at most {@code maxMovedRows}) move to the
     * default partition with their ids in the transaction that drops it, so retention never removes them.
     */
    public OutboxRetention.Partitions maintain(Connection c, Instant now, Instant cutoff, Duration lockTimeout,
            int maxMovedRows) throws SQLException {
        if (!isPartitioned(c, schema)) {
            c.commit();
            boolean unfinished = new PartitionConversion(schema).inProgress(c);
            if (unfinished) {
                finishConversion(c, now);
            }
            if (!isPartitioned(c, schema)) {
                c.commit();
                throw new OutboxException(unfinished ? "another session is converting " + schema + " into a"
                        + " partitioned table; the next run maintains it" : schema + " is configured as partitioned"
                        + " but the table is not: run OutboxSchema.migrate with the same configuration first (it"
                        + " converts the table)", null, unfinished);
            }
        }
        c.commit();
        List<String> kept = new ArrayList<>();
        List<String> created = createAhead(c, now, lockTimeout, kept);
        List<String> dropped = new ArrayList<>();
        long moved = dropExpired(c, cutoff, lockTimeout, maxMovedRows, dropped, kept);
        long defaultRows = defaultRows(c);
        c.commit();
        return new OutboxRetention.Partitions(List.copyOf(created), List.copyOf(dropped), moved, List.copyOf(kept),
                defaultRows);
    }

    /**
     * Creates the partitions of the current period and {@code ahead} after it that do not exist yet (each a plain
     * table attached under SHARE UPDATE EXCLUSIVE, so writers go on); returns the names created. A period that cannot
     * be created now is described in {@code kept}.
     */
    public List<String> createAhead(Connection c, Instant now, Duration lockTimeout, List<String> kept)
            throws SQLException {
        List<String> created = new ArrayList<>();
        List<Partition> existing = partitions(c);
        c.commit();
        for (PartitionBounds.Range range : PartitionBounds.currentAndAhead(table, partitioning, now)) {
            if (existing.stream().anyMatch(p -> p.overlaps(range.from(), range.to()))) {
                continue;
            }
            String name = range.name();
            try (Statement st = c.createStatement()) {
                Jdbc.queryString(c, PartitionStatements.SET_LOCAL_LOCK_TIMEOUT,
                        PartitionStatements.millis(lockTimeout));
                st.execute(statements.createPartitionTable(name));
                st.execute(statements.attachPartition(name, range.from(), range.to()));
                c.commit();
                created.add(name);
            } catch (SQLException e) {
                Jdbc.rollbackQuietly(c);
                if (PgErrors.is(e, PgErrors.CHECK_VIOLATION)) {
                    kept.add(name + " not created: the default partition holds rows of its period (retention did"
                            + " not run ahead in time); they stay in the default partition");
                } else if (PgErrors.is(e, PgErrors.LOCK_NOT_AVAILABLE)) {
                    kept.add(name + " not created yet: lock timeout, the next run retries");
                } else {
                    throw e;
                }
            }
        }
        return created;
    }

    private long dropExpired(Connection c, Instant cutoff, Duration lockTimeout, int maxMovedRows,
            List<String> dropped, List<String> kept) throws SQLException {
        List<Partition> expired = partitions(c).stream().filter(p -> p.endedBy(cutoff)).toList();
        c.commit();
        if (expired.isEmpty()) {
            return 0;
        }
        String columns = PartitionCatalog.insertableColumns(c, parent);
        c.commit();
        long moved = 0;
        for (Partition p : expired) {
            long[] counts = counts(c, p.name);
            c.commit();
            if (counts[0] > 0) {
                kept.add(p.name + " kept: " + counts[0] + " PENDING rows are not published yet");
                continue;
            }
            if (counts[1] > maxMovedRows) {
                kept.add(p.name + " kept: " + counts[1] + " PARKED/DEAD/DISCARDED rows, more than the "
                        + maxMovedRows + " moved to the default partition in one drop; requeue or discard them");
                continue;
            }
            try (Statement st = c.createStatement()) {
                Jdbc.queryString(c, PartitionStatements.SET_LOCAL_LOCK_TIMEOUT,
                        PartitionStatements.millis(lockTimeout));
                st.execute(statements.detachPartition(p.name));
                long[] again = counts(c, p.name);
                if (again[0] > 0) {
                    c.rollback();
                    kept.add(p.name + " kept: " + again[0] + " PENDING rows are not published yet");
                    continue;
                }
                int n = st.executeUpdate(statements.moveFinalRowsToParent(p.name, columns));
                st.execute(statements.dropTable(p.name));
                c.commit();
                moved += n;
                dropped.add(p.name);
                log.info("txoutbox-partitions: dropped {} of {}{}", p.name, schema,
                        n == 0 ? "" : " (" + n + " parked/dead/discarded rows moved to " + defaultPartition() + ")");
            } catch (SQLException e) {
                Jdbc.rollbackQuietly(c);
                if (!PgErrors.is(e, PgErrors.LOCK_NOT_AVAILABLE)) {
                    throw e;
                }
                kept.add(p.name + " not dropped yet: lock timeout, the next run retries");
            }
        }
        return moved;
    }

    /** {PENDING rows, PARKED/DEAD/DISCARDED rows} of one partition, each by its partial index. */
    private long[] counts(Connection c, String partition) throws SQLException {
        try (Statement st = c.createStatement();
                ResultSet rs = st.executeQuery(statements.countPendingAndFinal(partition))) {
            rs.next();
            return new long[] {rs.getLong(1), rs.getLong(2)};
        }
    }

    /**
     * Rows in the default partition (counted up to a million): normally only moved parked/dead rows. Runs in the
     * caller's transaction.
     */
    public long defaultRows(Connection c) throws SQLException {
        try (Statement st = c.createStatement();
                ResultSet rs = st.executeQuery(statements.countDefaultRows(defaultPartition()))) {
            rs.next();
            return rs.getLong(1);
        }
    }
}
