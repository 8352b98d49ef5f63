package io.txoutbox.internal.partition;

import io.txoutbox.OutboxException;
import io.txoutbox.OutboxPartitioning;
import io.txoutbox.OutboxSchema;
import io.txoutbox.internal.Identifiers;
import io.txoutbox.internal.SqlErrors;
import io.txoutbox.internal.TestHooks;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Turns the plain outbox table into a partitioned one in steps of short transactions, each of which commits a
 * working outbox: every INSERT the plain table accepted is accepted in every committed state, the relay sees every
 * row, and a process killed between any two steps leaves a table that the next migrate, relay start or retention
 * run finishes converting.
 *
 * <p>Why not one CHECK on the live table: attaching the old table as the partition of the ids before a bound B
 * without a scan under ACCESS EXCLUSIVE needs a validated {@code CHECK (event_id < B)} on it, and such a check on the
 * table writers insert into rejects every INSERT at or after B (UUIDv7 ids reach B by themselves) for as long as a
 * failed or killed conversion leaves it there. So the old table stops receiving INSERTs before it gets the check:
 * <ol>
 * <li><b>split</b> (one transaction, ACCESS EXCLUSIVE, catalog only): the table becomes {@code <table>_legacy} and
 * a new, empty plain table of the same definition takes its name, indexes, grants, owner and the continued id
 * sequence; the legacy table becomes its inheritance child, so reads, claims, marks and deletes through the table's
 * name still see every row while INSERTs go to the new table only. The legacy table gets
 * {@code CHECK (event_id < B) NOT VALID}: it receives no INSERT any more, so the check rejects nothing.</li>
 * <li><b>validate</b> (SHARE UPDATE EXCLUSIVE, a scan; writers and the relay go on).</li>
 * <li><b>move</b>: published rows written since the split with ids before B move into the legacy table in batches
 * of {@value #MOVE_BATCH}, so the last step copies few rows.</li>
 * <li><b>swap</b> (one transaction, ACCESS EXCLUSIVE on both, catalog only but for the rows not moved): a
 * partitioned table takes the name, the legacy table is attached for the ids before B (the validated check spares
 * the scan), a default partition is created, and the rows written since the split are copied in with their ids.</li>
 * </ol>
 * Every step finds where the previous one stopped from the catalog alone, so nothing else records progress.
 */
final class PartitionConversion {

    private static final Logger log = LoggerFactory.getLogger(PartitionConversion.class);
    /** Advisory lock namespace of conversions: "txpc". */
    private static final int LOCK_NAMESPACE = 0x74787063;
    /** The legacy partition's bound lies at least this far ahead when the conversion finishes. */
    static final Duration CONVERSION_MARGIN = Duration.ofHours(1);
    private static final int LOCK_ATTEMPTS = 10;
    static final int MOVE_BATCH = 1_000;
    private static final Pattern UUID_IN_CHECK =
            Pattern.compile("'([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})'");

    enum Stage { MISSING, PLAIN, SPLIT, PARTITIONED }

    /** Where a conversion stands: for {@link Stage#SPLIT}, the legacy table's bound and whether it is validated. */
    record State(Stage stage, UUID bound, boolean boundValidated, boolean leftoverCheck) {
    }

    private final OutboxSchema schema;
    private final OutboxPartitioning partitioning;
    private final String parent;
    private final String table;
    private final String legacy;
    private final String check;

    PartitionConversion(OutboxSchema schema) {
        this.schema = schema;
        this.partitioning = schema.partitioning();
        this.parent = schema.qualifiedOutboxTable();
        this.table = schema.outboxTable();
        this.legacy = table + "_legacy";
        this.check = table + "_legacy_bound";
    }

    /** The bound the conversion gives the legacy partition when it starts (or restarts its bound) at {@code now}. */
    UUID targetBound(Instant now) {
        return PartitionedOutbox.bound(partitioning.period().next(partitioning.period().startOf(
                now.plus(CONVERSION_MARGIN))));
    }

    State inspect(Connection c) throws SQLException {
        String kind = relkind(c, table);
        if (kind == null) {
            return new State(Stage.MISSING, null, false, false);
        }
        if ("p".equals(kind)) {
            return new State(Stage.PARTITIONED, null, false, false);
        }
        boolean split;
        try (PreparedStatement ps = c.prepareStatement("SELECT count(*) FROM pg_inherits WHERE inhrelid ="
                + " to_regclass(?) AND inhparent = ?::regclass")) {
            ps.setString(1, qualified(legacy));
            ps.setString(2, parent);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                split = rs.getLong(1) > 0;
            }
        }
        String on = split ? qualified(legacy) : parent;
        try (PreparedStatement ps = c.prepareStatement("SELECT pg_get_constraintdef(oid), convalidated"
                + " FROM pg_constraint WHERE conrelid = ?::regclass AND conname = ? AND contype = 'c'")) {
            ps.setString(1, on);
            ps.setString(2, check);
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next()) {
                    return new State(split ? Stage.SPLIT : Stage.PLAIN, null, false, false);
                }
                if (!split) {
                    return new State(Stage.PLAIN, null, false, true);
                }
                Matcher m = UUID_IN_CHECK.matcher(rs.getString(1));
                return new State(Stage.SPLIT, m.find() ? UUID.fromString(m.group(1)) : null, rs.getBoolean(2),
                        false);
            }
        }
    }

    /** Whether a conversion was started and not finished (or an older release left its bound check behind). */
    boolean inProgress(Connection c) throws SQLException {
        State s = inspect(c);
        c.commit();
        return s.stage == Stage.SPLIT || s.leftoverCheck;
    }

    /**
     * Runs the conversion from wherever it stands to the end. {@code wait}: wait for a conversion another session
     * runs (migrate), or return at once (relay start, retention: that session finishes it).
     *
     * @return whether this call changed the table
     */
    boolean run(Connection c, Instant now, boolean wait) {
        boolean autoCommit = true;
        Stage reached = Stage.PLAIN;
        try {
            autoCommit = c.getAutoCommit();
            c.setAutoCommit(false);
            if (!advisoryLock(c, wait)) {
                return false;
            }
            try {
                State s = inspect(c);
                c.commit();
                reached = s.stage;
                if (s.stage == Stage.PARTITIONED || s.stage == Stage.MISSING) {
                    return false;
                }
                UUID bound = s.bound;
                boolean validated = s.boundValidated;
                if (s.stage == Stage.PLAIN) {
                    if (s.leftoverCheck) {
                        dropLeftoverCheck(c);
                    }
                    // a NOT VALID check of the table's (its rows not checked yet) must hold for the rows before
                    // the split: the partition and its parent must agree on it. Validating it rejects nothing new.
                    validateChecks(c, parent, reached);
                    bound = targetBound(now);
                    split(c, bound);
                    reached = Stage.SPLIT;
                    validated = false;
                    TestHooks.hit(TestHooks.CONVERT_AFTER_SPLIT);
                }
                if (bound == null || PartitionedOutbox.compare(bound,
                        PartitionedOutbox.bound(now.plus(CONVERSION_MARGIN))) <= 0) {
                    // the conversion stopped long enough for its bound to come near: move it ahead, so that the
                    // rows written since then fit the legacy partition and the periods' partitions start later
                    UUID ahead = targetBound(now);
                    moveBound(c, ahead);
                    log.info("txoutbox-partitions: {}: the legacy partition's bound moved from {} to {}", schema,
                            bound, ahead);
                    bound = ahead;
                    validated = false;
                }
                validateChecks(c, parent, reached);
                if (!validated) {
                    validateChecks(c, qualified(legacy), reached);
                }
                TestHooks.hit(TestHooks.CONVERT_AFTER_VALIDATE);
                long moved = moveRows(c, bound);
                swap(c, bound);
                reached = Stage.PARTITIONED;
                TestHooks.hit(TestHooks.CONVERT_AFTER_SWAP);
                log.info("txoutbox-partitions: converted {} into a partitioned table; its rows are in {}"
                        + " (event ids before {}); {} rows written during the conversion moved there in batches",
                        schema, legacy, Instant.ofEpochMilli(bound.getMostSignificantBits() >>> 16), moved);
                return true;
            } finally {
                advisoryUnlock(c);
            }
        } catch (SQLException e) {
            rollbackQuietly(c);
            throw new OutboxException("converting " + schema + " into a partitioned table failed: " + e.getMessage()
                    + " (SQLState " + e.getSQLState() + "); " + whereItStopped(reached), e,
                    SqlErrors.isRetriable(e));
        } catch (RuntimeException e) {
            rollbackQuietly(c);
            throw e;
        } finally {
            restore(c, autoCommit);
        }
    }

    private String whereItStopped(Stage reached) {
        if (reached == Stage.PLAIN) {
            return "the table is unchanged, migrate again to retry";
        }
        return "the conversion stopped after its first step: " + table + " works meanwhile (every INSERT is"
                + " accepted, the relay and retention see every row) and the next migrate, relay start or retention"
                + " run finishes it";
    }

    /** Removes the CHECK an older release put on the plain table and left behind when its conversion failed. */
    private void dropLeftoverCheck(Connection c) throws SQLException {
        withLockRetries(c, st -> st.execute("ALTER TABLE " + parent + " DROP CONSTRAINT IF EXISTS "
                + Identifiers.quote(check)));
        log.warn("txoutbox-partitions: removed the check {} an earlier conversion of {} left on the plain table"
                + " (it would have rejected INSERTs with event ids past its bound)", check, schema);
    }

    /** Validates the NOT VALID checks of one relation, each in its own transaction (a scan, writers go on). */
    private void validateChecks(Connection c, String relation, Stage reached) throws SQLException {
        List<String> notValid = new ArrayList<>();
        try (PreparedStatement ps = c.prepareStatement("SELECT conname FROM pg_constraint WHERE conrelid ="
                + " ?::regclass AND contype = 'c' AND NOT convalidated ORDER BY conname")) {
            ps.setString(1, relation);
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
                st.execute("ALTER TABLE " + relation + " VALIDATE CONSTRAINT " + Identifiers.quote(name));
                c.commit();
            } catch (SQLException e) {
                rollbackQuietly(c);
                if ("23514".equals(e.getSQLState())) {
                    throw new OutboxException(schema + " cannot be converted: rows of " + relation + " violate its"
                            + " NOT VALID check " + name + ". Fix or delete those rows (or drop the check), then"
                            + " migrate again; " + whereItStopped(reached), e, false);
                }
                throw e;
            }
        }
    }

    /** Step 1: the table becomes the legacy child of a new, empty table of the same definition. */
    private void split(Connection c, UUID bound) throws SQLException {
        withLockRetries(c, st -> {
            st.execute("LOCK TABLE " + parent + " IN ACCESS EXCLUSIVE MODE");
            long late = rowsFrom(c, parent, bound);
            if (late > 0) {
                throw new OutboxException(schema + " cannot be partitioned by time: " + late + " rows have event"
                        + " ids at or after " + bound + " (" + Instant.ofEpochMilli(bound.getMostSignificantBits()
                        >>> 16) + "), so they are not UUIDv7 ids of the past. A partitioned outbox files every row by"
                        + " the time in its UUIDv7 event id: leave event ids to txoutbox (or give UUIDv7s), and keep"
                        + " the plain table with batched-delete retention until those rows are gone; the table is"
                        + " unchanged", null, false);
            }
            Definition d = definition(c, parent);
            String qualifiedLegacy = qualified(legacy);
            st.execute("ALTER TABLE " + parent + " RENAME TO " + Identifiers.quote(legacy));
            if (d.sequence != null) {
                st.execute("ALTER SEQUENCE " + d.sequence + " RENAME TO " + Identifiers.quote(legacy + "_id_seq"));
            }
            st.execute("ALTER TABLE " + qualifiedLegacy + " RENAME CONSTRAINT " + Identifiers.quote(d.pkName)
                    + " TO " + Identifiers.quote(legacyName(d.pkName, 0)));
            for (int i = 0; i < d.indexes.size(); i++) {
                st.execute("ALTER INDEX " + qualified(d.indexes.get(i)[0]) + " RENAME TO "
                        + Identifiers.quote(legacyName(d.indexes.get(i)[0], i + 1)));
            }
            st.execute("CREATE TABLE " + parent + " (LIKE " + qualifiedLegacy + " INCLUDING DEFAULTS"
                    + " INCLUDING IDENTITY INCLUDING GENERATED INCLUDING CONSTRAINTS INCLUDING STORAGE"
                    + " INCLUDING COMMENTS)");
            d.applyTo(st, c, parent, qualified(legacy + "_id_seq"));
            st.execute("ALTER TABLE " + qualifiedLegacy + " INHERIT " + parent);
            st.execute("ALTER TABLE " + qualifiedLegacy + " ADD CONSTRAINT " + Identifiers.quote(check)
                    + " CHECK (event_id < '" + bound + "'::uuid) NOT VALID");
            if (d.comment != null) {
                try (PreparedStatement ps = c.prepareStatement("SELECT format('COMMENT ON TABLE %s IS %L', ?, ?)")) {
                    ps.setString(1, parent);
                    ps.setString(2, d.comment);
                    try (ResultSet rs = ps.executeQuery()) {
                        rs.next();
                        st.execute(rs.getString(1));
                    }
                }
            }
            TestHooks.hit(TestHooks.CONVERT_BEFORE_SPLIT_COMMIT);
        });
        log.info("txoutbox-partitions: {}: split off {} (event ids before {}); INSERTs go to a new table of the same"
                + " name while the conversion goes on", schema, legacy, bound);
    }

    /** Replaces the legacy table's bound by a later one: its rows all lie before the earlier bound. */
    private void moveBound(Connection c, UUID bound) throws SQLException {
        withLockRetries(c, st -> {
            st.execute("ALTER TABLE " + qualified(legacy) + " DROP CONSTRAINT IF EXISTS " + Identifiers.quote(check));
            st.execute("ALTER TABLE " + qualified(legacy) + " ADD CONSTRAINT " + Identifiers.quote(check)
                    + " CHECK (event_id < '" + bound + "'::uuid) NOT VALID");
        });
    }

    /**
     * Step 3: moves published rows written since the split (ids before the bound) into the legacy table, one batch per
     * transaction, until a batch comes back short. Published rows only: the relay does not touch them again, so no
     * mark can miss a row that moved under it; pending and failed rows are copied by the swap.
     */
    private long moveRows(Connection c, UUID bound) throws SQLException {
        String columns = insertableColumns(c, parent);
        String sql = "WITH m AS (DELETE FROM ONLY " + parent + " WHERE event_id IN (SELECT event_id FROM ONLY "
                + parent + " WHERE state = 'PUBLISHED' AND event_id < ?::uuid LIMIT " + MOVE_BATCH
                + " FOR UPDATE SKIP LOCKED) RETURNING " + columns + ") INSERT INTO " + qualified(legacy) + " ("
                + columns + ") OVERRIDING SYSTEM VALUE SELECT " + columns + " FROM m ON CONFLICT DO NOTHING";
        long moved = 0;
        for (int batch = 1; ; batch++) {
            int n;
            try (Statement st = c.createStatement(); PreparedStatement ps = c.prepareStatement(sql)) {
                st.execute("SET LOCAL lock_timeout = '1s'");
                ps.setObject(1, bound);
                n = ps.executeUpdate();
                c.commit();
            } catch (SQLException e) {
                rollbackQuietly(c);
                if (!"55P03".equals(e.getSQLState())) {
                    throw e;
                }
                log.info("txoutbox-partitions: {}: moving rows waits for a lock (batch {}), the swap copies the rest",
                        schema, batch);
                return moved;
            }
            moved += n;
            if (batch == 1) {
                TestHooks.hit(TestHooks.CONVERT_AFTER_MOVE);
            }
            if (n < MOVE_BATCH) {
                return moved;
            }
        }
    }

    /** Step 4: the partitioned table takes the name; the legacy table is attached, the rest copied in. */
    private void swap(Connection c, UUID bound) throws SQLException {
        String window = shortName(table, "_conversion");
        String qualifiedWindow = qualified(window);
        String qualifiedLegacy = qualified(legacy);
        withLockRetries(c, st -> {
            st.execute("LOCK TABLE " + parent + " IN ACCESS EXCLUSIVE MODE");
            st.execute("LOCK TABLE " + qualifiedLegacy + " IN ACCESS EXCLUSIVE MODE");
            if (!boundValidated(c)) {
                // without it ATTACH would scan the legacy table under ACCESS EXCLUSIVE: never
                throw new OutboxException("the check " + check + " of " + legacy + " is not validated; migrate"
                        + " again to finish converting " + schema, null, true);
            }
            Definition d = definition(c, parent);
            String columns = insertableColumns(c, parent);
            st.execute("ALTER TABLE " + qualifiedLegacy + " NO INHERIT " + parent);
            st.execute("ALTER TABLE " + parent + " RENAME TO " + Identifiers.quote(window));
            if (d.sequence != null) {
                st.execute("ALTER SEQUENCE " + d.sequence + " RENAME TO "
                        + Identifiers.quote(shortName(window, "_id_seq")));
            }
            // free the names of the indexes for the partitioned table; the table goes at the end of this transaction
            st.execute("ALTER TABLE " + qualifiedWindow + " DROP CONSTRAINT " + Identifiers.quote(d.pkName));
            for (String[] index : d.indexes) {
                st.execute("DROP INDEX " + qualified(index[0]));
            }
            st.execute("CREATE TABLE " + parent + " (LIKE " + qualifiedWindow + " INCLUDING DEFAULTS"
                    + " INCLUDING IDENTITY INCLUDING GENERATED INCLUDING CONSTRAINTS INCLUDING STORAGE"
                    + " INCLUDING COMMENTS) PARTITION BY RANGE (event_id)");
            d.applyTo(st, c, parent, qualified(shortName(window, "_id_seq")));
            // PostgreSQL 17 and later refuse to attach a partition with an identity of its own (the parent's applies
            // to it once attached); its sequence has handed out no id since the split
            st.execute("ALTER TABLE " + qualifiedLegacy + " ALTER COLUMN id DROP IDENTITY IF EXISTS");
            st.execute("ALTER TABLE " + parent + " ATTACH PARTITION " + qualifiedLegacy
                    + " FOR VALUES FROM (MINVALUE) TO ('" + bound + "')");
            st.execute("ALTER TABLE " + qualifiedLegacy + " DROP CONSTRAINT " + Identifiers.quote(check));
            st.execute("CREATE TABLE " + qualified(table + "_default") + " PARTITION OF " + parent + " DEFAULT");
            // ON CONFLICT: while split, an INSERT could repeat the event id of a row written before the split (the
            // two tables' keys are apart); the event is there already, its copy goes
            st.execute("INSERT INTO " + parent + " (" + columns + ") OVERRIDING SYSTEM VALUE SELECT " + columns
                    + " FROM " + qualifiedWindow + " ON CONFLICT DO NOTHING");
            st.execute("DROP TABLE " + qualifiedWindow);
            st.execute("COMMENT ON TABLE " + parent + " IS 'txoutbox outbox, partitioned by "
                    + partitioning.period().name().toLowerCase() + " of event_id (UUIDv7). Shards: "
                    + schema.shards() + ".'");
            TestHooks.hit(TestHooks.CONVERT_BEFORE_SWAP_COMMIT);
        });
    }

    private boolean boundValidated(Connection c) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("SELECT convalidated FROM pg_constraint WHERE conrelid ="
                + " ?::regclass AND conname = ?")) {
            ps.setString(1, qualified(legacy));
            ps.setString(2, check);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() && rs.getBoolean(1);
            }
        }
    }

    /** Rows with ids at or after {@code bound}, by the primary key's index. */
    private static long rowsFrom(Connection c, String relation, UUID bound) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("SELECT count(*) FROM " + relation
                + " WHERE event_id >= ?::uuid")) {
            ps.setObject(1, bound);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getLong(1);
            }
        }
    }

    // --------------------------------------------------------------------------------------- the table's definition

    /** What a table carries that {@code CREATE TABLE ... LIKE} does not copy. */
    private final class Definition {
        String pkName;
        List<String[]> indexes;
        String owner;
        String sequence;
        List<String> grants;
        List<String> sequenceGrants;
        String comment;

        /** Gives {@code target} the primary key, indexes, owner, grants, and continues the id sequence. */
        void applyTo(Statement st, Connection c, String target, String previousSequence) throws SQLException {
            st.execute("ALTER TABLE " + target + " ADD CONSTRAINT " + Identifiers.quote(pkName)
                    + " PRIMARY KEY (event_id)");
            for (String[] index : indexes) {
                st.execute(indexOn(target, index[0], index[1]));
            }
            st.execute("ALTER TABLE " + target + " OWNER TO " + owner);
            for (String grant : grants) {
                st.execute(grant);
            }
            String newSequence = sequence(c, target);
            for (String grant : sequenceGrants) {
                st.execute(String.format(grant, newSequence));
            }
            if (sequence != null) {
                try (PreparedStatement ps = c.prepareStatement("SELECT setval(pg_get_serial_sequence(?, 'id'),"
                        + " s.last_value, s.is_called) FROM " + previousSequence + " s")) {
                    ps.setString(1, target);
                    ps.execute();
                }
            }
        }
    }

    private Definition definition(Connection c, String relation) throws SQLException {
        Definition d = new Definition();
        d.indexes = indexes(c, relation);
        d.pkName = primaryKeyName(c, relation);
        d.owner = owner(c, relation);
        d.sequence = sequence(c, relation);
        d.grants = new ArrayList<>(grants(c, relation, "TABLE " + parent));
        d.grants.addAll(columnGrants(c, relation, "TABLE " + parent));
        d.sequenceGrants = d.sequence == null ? List.of() : grants(c, d.sequence, "SEQUENCE %s");
        try (PreparedStatement ps = c.prepareStatement("SELECT obj_description(?::regclass, 'pg_class')")) {
            ps.setString(1, relation);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                d.comment = rs.getString(1);
            }
        }
        return d;
    }

    /** {name, definition} of the table's indexes other than the primary key's. */
    private static List<String[]> indexes(Connection c, String relation) throws SQLException {
        List<String[]> out = new ArrayList<>();
        try (PreparedStatement ps = c.prepareStatement("SELECT ic.relname, pg_get_indexdef(i.indexrelid)"
                + " FROM pg_index i JOIN pg_class ic ON ic.oid = i.indexrelid WHERE i.indrelid = ?::regclass"
                + " AND NOT i.indisprimary ORDER BY ic.relname")) {
            ps.setString(1, relation);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    out.add(new String[] {rs.getString(1), rs.getString(2)});
                }
            }
        }
        return out;
    }

    private static final Pattern INDEX_DEF =
            Pattern.compile("^CREATE (UNIQUE )?INDEX \\S+ ON (?:ONLY )?\\S+ (USING .*)$", Pattern.DOTALL);

    private String indexOn(String target, String name, String definition) {
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
                + target + " " + m.group(2);
    }

    private String primaryKeyName(Connection c, String relation) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("SELECT conname FROM pg_constraint WHERE conrelid ="
                + " ?::regclass AND contype = 'p'")) {
            ps.setString(1, relation);
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
     * table, the relay's SELECT on the id sequence); {@code target} may hold a {@code %s} for a name known later.
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

    /**
     * GRANT statements for the column privileges of {@code relation} (the relay's, worker's and admin's UPDATE on the
     * state columns only, as {@code OutboxGrants} documents them): {@code aclexplode(relacl)} does not hold them.
     */
    private static List<String> columnGrants(Connection c, String relation, String target) throws SQLException {
        List<String> out = new ArrayList<>();
        try (PreparedStatement ps = c.prepareStatement("SELECT CASE WHEN x.grantee = 0 THEN 'PUBLIC'"
                + " ELSE quote_ident(pg_get_userbyid(x.grantee)) END, x.privilege_type, x.is_grantable,"
                + " string_agg(quote_ident(a.attname), ', ' ORDER BY a.attnum)"
                + " FROM pg_class t JOIN pg_attribute a ON a.attrelid = t.oid, aclexplode(a.attacl) x"
                + " WHERE t.oid = ?::regclass AND a.attnum > 0 AND NOT a.attisdropped AND x.grantee <> t.relowner"
                + " GROUP BY 1, 2, 3 ORDER BY 1, 2")) {
            ps.setString(1, relation);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    out.add("GRANT " + rs.getString(2) + " (" + rs.getString(4) + ") ON " + target + " TO "
                            + rs.getString(1) + (rs.getBoolean(3) ? " WITH GRANT OPTION" : ""));
                }
            }
        }
        return out;
    }

    private static String owner(Connection c, String relation) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("SELECT quote_ident(pg_get_userbyid(relowner)) FROM pg_class"
                + " WHERE oid = ?::regclass")) {
            ps.setString(1, relation);
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

    private String relkind(Connection c, String name) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("SELECT c.relkind FROM pg_class c JOIN pg_namespace n"
                + " ON n.oid = c.relnamespace WHERE n.nspname = ? AND c.relname = ?")) {
            ps.setString(1, schema.schema());
            ps.setString(2, name);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() ? rs.getString(1) : null;
            }
        }
    }

    static String insertableColumns(Connection c, String relation) throws SQLException {
        List<String> names = new ArrayList<>();
        try (PreparedStatement ps = c.prepareStatement("SELECT attname FROM pg_attribute WHERE attrelid ="
                + " ?::regclass AND attnum > 0 AND NOT attisdropped AND attgenerated = '' ORDER BY attnum")) {
            ps.setString(1, relation);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    names.add(Identifiers.quote(rs.getString(1)));
                }
            }
        }
        return String.join(", ", names);
    }

    /** {@code outbox_event_pending} becomes {@code outbox_event_legacy_pending}; too long a name gets a number. */
    private String legacyName(String name, int n) {
        String renamed = name.startsWith(table + "_") ? table + "_legacy_" + name.substring(table.length() + 1)
                : name + "_legacy";
        return renamed.length() <= 63 ? renamed : table + "_legacy_" + n;
    }

    private static String shortName(String base, String suffix) {
        return (base.length() + suffix.length() <= 63 ? base : base.substring(0, 63 - suffix.length())) + suffix;
    }

    private String qualified(String name) {
        return Identifiers.quote(schema.schema()) + "." + Identifiers.quote(name);
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
                // a deadlock with a session that read the table before this step locked it: it let go, try again
                if (!("55P03".equals(e.getSQLState()) || "40P01".equals(e.getSQLState())) || attempt == LOCK_ATTEMPTS) {
                    throw e;
                }
                log.info("txoutbox-partitions: {} is busy ({}), attempt {} of {}", schema,
                        "55P03".equals(e.getSQLState()) ? "lock timeout" : "deadlock", attempt, LOCK_ATTEMPTS);
            }
        }
    }

    private boolean advisoryLock(Connection c, boolean wait) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(wait ? "SELECT pg_advisory_lock(?, ?), true"
                : "SELECT true, pg_try_advisory_lock(?, ?)")) {
            ps.setInt(1, LOCK_NAMESPACE);
            ps.setInt(2, (schema.schema() + "." + table).hashCode());
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                boolean got = rs.getBoolean(2);
                c.commit();
                return got;
            }
        }
    }

    private void advisoryUnlock(Connection c) throws SQLException {
        rollbackQuietly(c);
        try (PreparedStatement ps = c.prepareStatement("SELECT pg_advisory_unlock(?, ?)")) {
            ps.setInt(1, LOCK_NAMESPACE);
            ps.setInt(2, (schema.schema() + "." + table).hashCode());
            ps.execute();
            c.commit();
        }
    }

    private static void restore(Connection c, boolean autoCommit) {
        try {
            c.setAutoCommit(autoCommit);
        } catch (SQLException ignored) {
            // the connection is broken; the caller finds out
        }
    }

    static void rollbackQuietly(Connection c) {
        try {
            c.rollback();
        } catch (SQLException ignored) {
            // the original failure is reported
        }
    }
}
