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
    private static final Pattern INDEX_DEF =
            Pattern.compile("^CREATE (UNIQUE )?INDEX \\S+ ON (?:ONLY )?\\S+ (USING .*)$", Pattern.DOTALL);
    /** Advisory lock namespace of conversions: "txpc". */
    private static final int LOCK_NAMESPACE = 0x74787063;
    /** A conversion must finish before the legacy partition's bound, which lies at least this far ahead. */
    private static final Duration CONVERSION_MARGIN = Duration.ofHours(1);
    private static final int LOCK_ATTEMPTS = 10;
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
                + " FROM pg_inherits i JOIN pg_class p ON p.oid = i.inhrelid WHERE i.inhparent = ?::regclass")) {
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
     * Turns the plain outbox table into a partitioned one, once (a partitioned table is left as it is): the existing
     * table becomes the partition {@code <table>_legacy} of all ids before the start of the next period (at least an
     * hour ahead), without copying a row, and a default partition is created ({@link #createAhead} makes the
     * periods' partitions).
     *
     * <p>Steps: (1) add {@code CHECK (event_id < bound) NOT VALID} and validate it (and any other NOT VALID check)
     * — a scan under SHARE UPDATE EXCLUSIVE, writers go on; (2) in one transaction under ACCESS EXCLUSIVE (catalog
     * changes only): rename the table, its sequence and indexes, create the partitioned parent like it with the same
     * indexes and grants, attach the old table (the validated check spares the scan) and continue the id sequence.
     *
     * @return whether this call converted the table
     */
    public boolean convert(Connection c, Instant now) {
        boolean autoCommit = true;
        try {
            autoCommit = c.getAutoCommit();
            c.setAutoCommit(false);
            advisoryLock(c, true);
            try {
                if (isPartitioned(c, schema)) {
                    c.commit();
                    return false;
                }
                Instant boundary = partitioning.period().next(partitioning.period().startOf(now.plus(
                        CONVERSION_MARGIN)));
                UUID bound = bound(boundary);
                String check = table + "_legacy_bound";
                addBoundCheck(c, check, bound);
                validateChecks(c, check, bound, boundary);
                swap(c, check, bound);
                log.info("txoutbox-partitions: converted {} into a partitioned table; its rows are in {}_legacy"
                        + " (event ids before {})", schema, table, boundary);
                return true;
            } finally {
                advisoryLock(c, false);
            }
        } catch (SQLException e) {
            rollbackQuietly(c);
            throw new OutboxException("converting " + schema + " into a partitioned table failed: " + e.getMessage()
                    + " (SQLState " + e.getSQLState() + "); the table is unchanged, migrate again to retry", e,
                    SqlErrors.isRetriable(e));
        } catch (RuntimeException e) {
            rollbackQuietly(c);
            throw e;
        } finally {
            restore(c, autoCommit);
        }
    }

    private void addBoundCheck(Connection c, String check, UUID bound) throws SQLException {
        withLockRetries(c, st -> {
            st.execute("ALTER TABLE " + parent + " DROP CONSTRAINT IF EXISTS " + Identifiers.quote(check));
            st.execute("ALTER TABLE " + parent + " ADD CONSTRAINT " + Identifiers.quote(check)
                    + " CHECK (event_id < '" + bound + "'::uuid) NOT VALID");
        });
    }

    private void validateChecks(Connection c, String check, UUID bound, Instant boundary) throws SQLException {
        List<String> notValid = new ArrayList<>();
        try (PreparedStatement ps = c.prepareStatement("SELECT conname FROM pg_constraint WHERE conrelid ="
                + " ?::regclass AND contype = 'c' AND NOT convalidated ORDER BY conname = ? DESC, conname")) {
            ps.setString(1, parent);
            ps.setString(2, check);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    notValid.add(rs.getString(1));
                }
            }
        }
        c.commit();
        for (String name : notValid) {
            try (Statement st = c.createStatement()) {
                st.execute("SET LOCAL statement_timeout = 0");
                st.execute("ALTER TABLE " + parent + " VALIDATE CONSTRAINT " + Identifiers.quote(name));
                c.commit();
            } catch (SQLException e) {
                rollbackQuietly(c);
                if (!"23514".equals(e.getSQLState()) || !name.equals(check)) {
                    throw e;
                }
                long late;
                try (Statement st = c.createStatement();
                        ResultSet rs = st.executeQuery("SELECT count(*) FROM " + parent + " WHERE event_id >= '"
                                + bound + "'::uuid")) {
                    rs.next();
                    late = rs.getLong(1);
                }
                withLockRetries(c, st -> st.execute("ALTER TABLE " + parent + " DROP CONSTRAINT IF EXISTS "
                        + Identifiers.quote(check)));
                throw new OutboxException(schema + " cannot be partitioned by time: " + late + " rows have event"
                        + " ids at or after " + bound + " (" + boundary + "), so they are not UUIDv7 ids of the"
                        + " past. A partitioned outbox files every row by the time in its UUIDv7 event id: leave"
                        + " event ids to txoutbox (or give UUIDv7s), and keep the plain table with batched-delete"
                        + " retention until those rows are gone", e, false);
            }
        }
    }

    private void swap(Connection c, String check, UUID bound) throws SQLException {
        String legacy = table + "_legacy";
        withLockRetries(c, st -> {
            st.execute("LOCK TABLE " + parent + " IN ACCESS EXCLUSIVE MODE");
            List<String[]> indexes = indexes(c);
            String pkName = primaryKeyName(c);
            String owner = owner(c);
            String sequence = sequence(c, parent);
            List<String> grants = grants(c, parent, "TABLE " + parent);
            List<String> sequenceGrants = sequence == null ? List.of() : grants(c, sequence, "SEQUENCE %s");
            st.execute("ALTER TABLE " + parent + " RENAME TO " + Identifiers.quote(legacy));
            String qualifiedLegacy = qualified(legacy);
            if (sequence != null) {
                st.execute("ALTER SEQUENCE " + sequence + " RENAME TO " + Identifiers.quote(legacy + "_id_seq"));
            }
            st.execute("ALTER TABLE " + qualifiedLegacy + " RENAME CONSTRAINT " + Identifiers.quote(pkName)
                    + " TO " + Identifiers.quote(legacyName(pkName, 0)));
            for (int i = 0; i < indexes.size(); i++) {
                st.execute("ALTER INDEX " + qualified(indexes.get(i)[0]) + " RENAME TO "
                        + Identifiers.quote(legacyName(indexes.get(i)[0], i + 1)));
            }
            st.execute("CREATE TABLE " + parent + " (LIKE " + qualifiedLegacy + " INCLUDING DEFAULTS"
                    + " INCLUDING IDENTITY INCLUDING GENERATED INCLUDING CONSTRAINTS INCLUDING STORAGE"
                    + " INCLUDING COMMENTS) PARTITION BY RANGE (event_id)");
            st.execute("ALTER TABLE " + parent + " DROP CONSTRAINT " + Identifiers.quote(check));
            st.execute("ALTER TABLE " + parent + " ADD CONSTRAINT " + Identifiers.quote(pkName)
                    + " PRIMARY KEY (event_id)");
            for (String[] index : indexes) {
                st.execute(indexOnParent(index[0], index[1]));
            }
            st.execute("ALTER TABLE " + parent + " OWNER TO " + owner);
            for (String grant : grants) {
                st.execute(grant);
            }
            String newSequence = sequence(c, parent);
            for (String grant : sequenceGrants) {
                st.execute(String.format(grant, newSequence));
            }
            st.execute("ALTER TABLE " + parent + " ATTACH PARTITION " + qualifiedLegacy
                    + " FOR VALUES FROM (MINVALUE) TO ('" + bound + "')");
            st.execute("ALTER TABLE " + qualifiedLegacy + " DROP CONSTRAINT " + Identifiers.quote(check));
            st.execute("CREATE TABLE " + qualifiedDefaultPartition() + " PARTITION OF " + parent + " DEFAULT");
            st.execute("SELECT setval(pg_get_serial_sequence('" + parent.replace("'", "''") + "', 'id'),"
                    + " s.last_value, s.is_called) FROM " + qualified(legacy + "_id_seq") + " s");
            st.execute("COMMENT ON TABLE " + parent + " IS 'txoutbox outbox, partitioned by "
                    + partitioning.period().name().toLowerCase() + " of event_id (UUIDv7). Shards: "
                    + schema.shards() + ".'");
        });
    }

    /** {name, definition} of the table's indexes other than the primary key's. */
    private List<String[]> indexes(Connection c) throws SQLException {
        List<String[]> out = new ArrayList<>();
        try (PreparedStatement ps = c.prepareStatement("SELECT ic.relname, pg_get_indexdef(i.indexrelid)"
                + " FROM pg_index i JOIN pg_class ic ON ic.oid = i.indexrelid WHERE i.indrelid = ?::regclass"
                + " AND NOT i.indisprimary ORDER BY ic.relname")) {
            ps.setString(1, parent);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    out.add(new String[] {rs.getString(1), rs.getString(2)});
                }
            }
        }
        return out;
    }

    private String indexOnParent(String name, String definition) {
        Matcher m = INDEX_DEF.matcher(definition);
        if (!m.matches()) {
            throw new OutboxException("cannot re-create index " + name + " on the partitioned " + schema
                    + ": unexpected definition " + definition, null, false);
        }
        if (m.group(1) != null && !definition.contains("event_id")) {
            throw new OutboxException("the unique index " + name + " of " + schema + " does not contain event_id;"
                    + " a partitioned table allows unique indexes only with the partition key: drop it, or keep"
                    + " the plain table", null, false);
        }
        return "CREATE " + (m.group(1) == null ? "" : m.group(1)) + "INDEX " + Identifiers.quote(name) + " ON "
                + parent + " " + m.group(2);
    }

    private String primaryKeyName(Connection c) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("SELECT conname FROM pg_constraint WHERE conrelid ="
                + " ?::regclass AND contype = 'p'")) {
            ps.setString(1, parent);
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next()) {
                    throw new OutboxException(schema + " has no primary key: is it a txoutbox table? Run"
                            + " OutboxSchema.migrate without partitioning first", null, false);
                }
                return rs.getString(1);
            }
        }
    }

    /**
     * GRANT statements that give {@code target} the privileges {@code relation} has (the writer role's INSERT on the
     * table, the retention's SELECT on the id sequence); {@code target} may hold a {@code %s} for a name known later.
     */
    private static List<String> grants(Connection c, String relation, String target) throws SQLException {
        List<String> out = new ArrayList<>();
        try (PreparedStatement ps = c.prepareStatement("SELECT CASE WHEN a.grantee = 0 THEN 'PUBLIC'"
                + " ELSE quote_ident(pg_get_userbyid(a.grantee)) END, a.privilege_type, a.is_grantable"
                + " FROM pg_class t, aclexplode(t.relacl) a WHERE t.oid = ?::regclass AND a.grantee <> t.relowner")) {
            ps.setString(1, relation);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    out.add("GRANT " + rs.getString(2) + " ON " + target + " TO " + rs.getString(1)
                            + (rs.getBoolean(3) ? " WITH GRANT OPTION" : ""));
                }
            }
        }
        return out;
    }

    /** The table's owner, quoted: the parent gets the same (and with it its identity sequence). */
    private String owner(Connection c) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("SELECT quote_ident(pg_get_userbyid(relowner)) FROM pg_class"
                + " WHERE oid = ?::regclass")) {
            ps.setString(1, parent);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getString(1);
            }
        }
    }

    private static String sequence(Connection c, String relation) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("SELECT pg_get_serial_sequence(?, 'id')")) {
            ps.setString(1, relation);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getString(1);
            }
        }
    }

    /** {@code outbox_event_pending} becomes {@code outbox_event_legacy_pending}; too long a name gets a number. */
    private String legacyName(String name, int n) {
        String renamed = name.startsWith(table + "_") ? table + "_legacy_" + name.substring(table.length() + 1)
                : name + "_legacy";
        return renamed.length() <= 63 ? renamed : table + "_legacy_" + n;
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
            throw new OutboxException(schema + " is configured as partitioned but the table is not: run"
                    + " OutboxSchema.migrate with the same configuration first (it converts the table)", null, false);
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

    private interface Work {
        void run(Statement st) throws SQLException;
    }

    /** Runs {@code work} in one transaction with a 1 s lock_timeout, retried on lock timeouts. */
    private void withLockRetries(Connection c, Work work) throws SQLException {
        for (int attempt = 1; ; attempt++) {
            try (Statement st = c.createStatement()) {
                st.execute("SET LOCAL lock_timeout = '1s'");
                work.run(st);
                c.commit();
                return;
            } catch (SQLException e) {
                rollbackQuietly(c);
                if (!"55P03".equals(e.getSQLState()) || attempt == LOCK_ATTEMPTS) {
                    throw e;
                }
                log.info("txoutbox-partitions: {} is busy (lock timeout), attempt {} of {}", schema, attempt,
                        LOCK_ATTEMPTS);
            }
        }
    }

    private void advisoryLock(Connection c, boolean lock) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(lock ? "SELECT pg_advisory_lock(?, ?)"
                : "SELECT pg_advisory_unlock(?, ?)")) {
            if (!lock) {
                rollbackQuietly(c);
            }
            ps.setInt(1, LOCK_NAMESPACE);
            ps.setInt(2, (schema.schema() + "." + table).hashCode());
            ps.execute();
            c.commit();
        }
    }

    private String qualified(String name) {
        return Identifiers.quote(schema.schema()) + "." + Identifiers.quote(name);
    }

    private static void restore(Connection c, boolean autoCommit) {
        try {
            c.setAutoCommit(autoCommit);
        } catch (SQLException ignored) {
            // the connection is broken; the caller finds out
        }
    }

    private static void rollbackQuietly(Connection c) {
        try {
            c.rollback();
        } catch (SQLException ignored) {
            // the original failure is reported
        }
    }
}
