package io.txoutbox.internal.partition;

import io.txoutbox.OutboxException;
import io.txoutbox.OutboxPartitioning;
import io.txoutbox.OutboxRetention;
import io.txoutbox.OutboxSchema;
import io.txoutbox.internal.Identifiers;
import io.txoutbox.internal.SqlErrors;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.UUID;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
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
    private static final Pattern RANGE = Pattern.compile("FOR VALUES FROM \\((.+)\\) TO \\((.+)\\)");
    private static final String FINAL_STATES = "('PARKED', 'DEAD', 'DISCARDED')";

    private final OutboxSchema schema;
    private final OutboxPartitioning partitioning;
    private final String parent;
    private final String table;

    public PartitionedOutbox(OutboxSchema schema) {
        if (schema.partitioning() == null) {
            throw new IllegalArgumentException(schema + " is not configured as partitioned");
        }
        this.schema = schema;
        this.partitioning = schema.partitioning();
        this.parent = schema.qualifiedOutboxTable();
        this.table = schema.outboxTable();
    }

    /** One partition: its range of event ids ({@code null}: MINVALUE / MAXVALUE), or the default partition. */
    public record Partition(String name, UUID from, UUID to, boolean isDefault) {

        boolean overlaps(UUID start, UUID end) {
            return !isDefault && (from == null || compare(from, end) < 0) && (to == null || compare(start, to) < 0);
        }
    }

    /** The lowest event id of a UUIDv7 made at {@code t}: the bound of the partition that starts at {@code t}. */
    public static UUID bound(Instant t) {
        return new UUID(t.toEpochMilli() << 16, 0L);
    }

    /** Compares as PostgreSQL does: unsigned, byte by byte. */
    public static int compare(UUID a, UUID b) {
        int c = Long.compareUnsigned(a.getMostSignificantBits(), b.getMostSignificantBits());
        return c != 0 ? c : Long.compareUnsigned(a.getLeastSignificantBits(), b.getLeastSignificantBits());
    }

    public String defaultPartition() {
        return table + "_default";
    }

    public String qualifiedDefaultPartition() {
        return qualified(defaultPartition());
    }

    /** Whether the outbox table exists and is a partitioned table. */
    public static boolean isPartitioned(Connection c, OutboxSchema schema) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("SELECT c.relkind FROM pg_class c JOIN pg_namespace n"
                + " ON n.oid = c.relnamespace WHERE n.nspname = ? AND c.relname = ?")) {
            ps.setString(1, schema.schema());
            ps.setString(2, schema.outboxTable());
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() && "p".equals(rs.getString(1));
            }
        }
    }

    /** The partitions, in range order, the default one last. */
    public List<Partition> partitions(Connection c) throws SQLException {
        List<Partition> out = new ArrayList<>();
        try (PreparedStatement ps = c.prepareStatement("SELECT p.relname, pg_get_expr(p.relpartbound, p.oid)"
                + " FROM pg_inherits i JOIN pg_class p ON p.oid = i.inhrelid WHERE i.inhparent = ?::regclass"
                + " AND p.relispartition")) {
            ps.setString(1, parent);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    out.add(parse(rs.getString(1), rs.getString(2)));
                }
            }
        }
        out.sort(Comparator.comparing((Partition p) -> p.isDefault)
                .thenComparing(p -> p.from == null ? new UUID(0, 0) : p.from, PartitionedOutbox::compare));
        return out;
    }

    static Partition parse(String name, String boundExpr) {
        if ("DEFAULT".equals(boundExpr)) {
            return new Partition(name, null, null, true);
        }
        Matcher m = RANGE.matcher(boundExpr);
        if (!m.matches()) {
            throw new OutboxException("partition " + name + " has bounds txoutbox does not understand: " + boundExpr
                    + "; only FROM (uuid) TO (uuid) ranges and DEFAULT belong on an outbox table", null, false);
        }
        return new Partition(name, value(m.group(1)), value(m.group(2)), false);
    }

    private static UUID value(String v) {
        if (v.equals("MINVALUE") || v.equals("MAXVALUE")) {
            return null;
        }
        return UUID.fromString(v.replace("'", ""));
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
            PartitionConversion.rollbackQuietly(c);
            throw new OutboxException("reading whether a conversion of " + schema + " is unfinished failed: "
                    + e.getMessage() + " (SQLState " + e.getSQLState() + ")", e, SqlErrors.isRetriable(e));
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
        OutboxPartitioning.Period period = partitioning.period();
        Instant start = period.startOf(now);
        for (int i = 0; i <= partitioning.ahead(); i++, start = period.next(start)) {
            UUID from = bound(start);
            UUID to = bound(period.next(start));
            if (existing.stream().anyMatch(p -> p.overlaps(from, to))) {
                continue;
            }
            String name = table + period.suffix(start);
            try (Statement st = c.createStatement()) {
                st.execute("SET LOCAL lock_timeout = '" + lockTimeout.toMillis() + "ms'");
                st.execute("CREATE TABLE " + qualified(name) + " (LIKE " + parent + " INCLUDING DEFAULTS"
                        + " INCLUDING GENERATED INCLUDING CONSTRAINTS INCLUDING STORAGE)");
                st.execute("ALTER TABLE " + parent + " ATTACH PARTITION " + qualified(name) + " FOR VALUES FROM ('"
                        + from + "') TO ('" + to + "')");
                c.commit();
                created.add(name);
            } catch (SQLException e) {
                rollbackQuietly(c);
                if ("23514".equals(e.getSQLState())) {
                    kept.add(name + " not created: the default partition holds rows of its period (retention did"
                            + " not run ahead in time); they stay in the default partition");
                } else if ("55P03".equals(e.getSQLState())) {
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
        UUID limit = bound(cutoff);
        List<Partition> expired = partitions(c).stream()
                .filter(p -> !p.isDefault && p.to != null && compare(p.to, limit) <= 0).toList();
        c.commit();
        if (expired.isEmpty()) {
            return 0;
        }
        String columns = insertableColumns(c);
        long moved = 0;
        for (Partition p : expired) {
            String qualifiedPartition = qualified(p.name);
            long[] counts = counts(c, qualifiedPartition);
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
                st.execute("SET LOCAL lock_timeout = '" + lockTimeout.toMillis() + "ms'");
                st.execute("ALTER TABLE " + parent + " DETACH PARTITION " + qualifiedPartition);
                long[] again = counts(c, qualifiedPartition);
                if (again[0] > 0) {
                    c.rollback();
                    kept.add(p.name + " kept: " + again[0] + " PENDING rows are not published yet");
                    continue;
                }
                int n = st.executeUpdate("INSERT INTO " + parent + " (" + columns + ") OVERRIDING SYSTEM VALUE"
                        + " SELECT " + columns + " FROM " + qualifiedPartition + " WHERE state IN " + FINAL_STATES);
                st.execute("DROP TABLE " + qualifiedPartition);
                c.commit();
                moved += n;
                dropped.add(p.name);
                log.info("txoutbox-partitions: dropped {} of {}{}", p.name, schema,
                        n == 0 ? "" : " (" + n + " parked/dead/discarded rows moved to " + defaultPartition() + ")");
            } catch (SQLException e) {
                rollbackQuietly(c);
                if (!"55P03".equals(e.getSQLState())) {
                    throw e;
                }
                kept.add(p.name + " not dropped yet: lock timeout, the next run retries");
            }
        }
        return moved;
    }

    /** {PENDING rows, PARKED/DEAD/DISCARDED rows} of one partition, each by its partial index. */
    private static long[] counts(Connection c, String relation) throws SQLException {
        try (Statement st = c.createStatement();
                ResultSet rs = st.executeQuery("SELECT (SELECT count(*) FROM " + relation + " WHERE state ="
                        + " 'PENDING'), (SELECT count(*) FROM " + relation + " WHERE state IN " + FINAL_STATES + ")")) {
            rs.next();
            return new long[] {rs.getLong(1), rs.getLong(2)};
        }
    }

    private String insertableColumns(Connection c) throws SQLException {
        List<String> names = new ArrayList<>();
        try (PreparedStatement ps = c.prepareStatement("SELECT attname FROM pg_attribute WHERE attrelid ="
                + " ?::regclass AND attnum > 0 AND NOT attisdropped AND attgenerated = '' ORDER BY attnum")) {
            ps.setString(1, parent);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    names.add(Identifiers.quote(rs.getString(1)));
                }
            }
        }
        c.commit();
        return String.join(", ", names);
    }

    /**
     * Rows in the default partition (counted up to a million): normally only moved parked/dead rows. Runs in the
     * caller's transaction.
     */
    public long defaultRows(Connection c) throws SQLException {
        try (Statement st = c.createStatement();
                ResultSet rs = st.executeQuery("SELECT count(*) FROM (SELECT 1 FROM " + qualifiedDefaultPartition()
                        + " LIMIT 1000000) d")) {
            rs.next();
            return rs.getLong(1);
        }
    }

    // ------------------------------------------------------------------------------------------------- plumbing

    private String qualified(String name) {
        return Identifiers.quote(schema.schema()) + "." + Identifiers.quote(name);
    }

    private static void rollbackQuietly(Connection c) {
        try {
            c.rollback();
        } catch (SQLException ignored) {
            // the original failure is reported
        }
    }
}
