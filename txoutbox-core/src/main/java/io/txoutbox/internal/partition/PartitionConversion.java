package io.txoutbox.internal.partition;

import io.txoutbox.OutboxException;
import io.txoutbox.OutboxPartitioning;
import io.txoutbox.OutboxSchema;
import io.txoutbox.internal.pg.Identifiers;
import io.txoutbox.internal.TestHooks;
import io.txoutbox.internal.partition.PartitionCatalog.Stage;
import io.txoutbox.internal.partition.PartitionCatalog.State;
import io.txoutbox.internal.pg.AdvisoryLocks;
import io.txoutbox.internal.pg.CheckStatements;
import io.txoutbox.internal.pg.ConversionStatements;
import io.txoutbox.internal.pg.Jdbc;
import io.txoutbox.internal.pg.PartitionStatements;
import io.txoutbox.internal.pg.PgErrors;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.UUID;
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
    private static final int LOCK_ATTEMPTS = 10;
    /** The lock_timeout of every step's transaction. */
    private static final Duration STEP_LOCK_TIMEOUT = Duration.ofSeconds(1);
    static final int MOVE_BATCH = 1_000;

    private final OutboxSchema schema;
    private final OutboxPartitioning partitioning;
    private final String parent;
    private final String table;
    private final String legacy;
    private final String check;
    private final ConversionStatements statements;
    private final AdvisoryLocks.Key lock;

    PartitionConversion(OutboxSchema schema) {
        this.schema = schema;
        this.partitioning = schema.partitioning();
        this.parent = schema.qualifiedOutboxTable();
        this.table = schema.outboxTable();
        this.legacy = table + "_legacy";
        this.check = table + "_legacy_bound";
        this.statements = new ConversionStatements(schema, legacy, check);
        this.lock = AdvisoryLocks.partitionConversion(schema.schema(), table);
    }

    /** Where the conversion stands, from the catalog (in the caller's transaction). */
    State inspect(Connection c) throws SQLException {
        return PartitionCatalog.conversionState(c, schema, legacy, check);
    }

    /** Whether a conversion was started and not finished (or an older release left its bound check behind). */
    boolean inProgress(Connection c) throws SQLException {
        State s = inspect(c);
        c.commit();
        return s.stage() == Stage.SPLIT || s.leftoverCheck();
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
                reached = s.stage();
                if (s.stage() == Stage.PARTITIONED || s.stage() == Stage.MISSING) {
                    return false;
                }
                UUID bound = s.bound();
                boolean validated = s.boundValidated();
                if (s.stage() == Stage.PLAIN) {
                    if (s.leftoverCheck()) {
                        dropLeftoverCheck(c);
                    }
                    // a NOT VALID check of the table's (its rows not checked yet) must hold for the rows before
                    // the split: the partition and its parent must agree on it. Validating it rejects nothing new.
                    validateChecks(c, parent, reached);
                    bound = PartitionBounds.conversionBound(partitioning, now);
                    split(c, bound);
                    reached = Stage.SPLIT;
                    validated = false;
                    TestHooks.hit(TestHooks.CONVERT_AFTER_SPLIT);
                }
                if (PartitionBounds.tooNear(bound, now)) {
                    // the conversion stopped long enough for its bound to come near: move it ahead, so that the
                    // rows written since then fit the legacy partition and the periods' partitions start later
                    UUID ahead = PartitionBounds.conversionBound(partitioning, now);
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
                        schema, legacy, PartitionBounds.instantOf(bound), moved);
                return true;
            } finally {
                advisoryUnlock(c);
            }
        } catch (SQLException e) {
            Jdbc.rollbackQuietly(c);
            throw new OutboxException("converting " + schema + " into a partitioned table failed: " + e.getMessage()
                    + " (SQLState " + e.getSQLState() + "); " + whereItStopped(reached), e,
                    PgErrors.isRetriable(e));
        } catch (RuntimeException e) {
            Jdbc.rollbackQuietly(c);
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
        withLockRetries(c, st -> st.execute(statements.dropLeftoverCheck()));
        log.warn("txoutbox-partitions: removed the check {} an earlier conversion of {} left on the plain table"
                + " (it would have rejected INSERTs with event ids past its bound)", check, schema);
    }

    /** Validates the NOT VALID checks of one relation, each in its own transaction (a scan, writers go on). */
    private void validateChecks(Connection c, String relation, Stage reached) throws SQLException {
        CheckStatements checks = new CheckStatements(relation);
        List<String> notValid = PartitionCatalog.notValidChecks(c, relation);
        c.commit();
        for (String name : notValid) {
            try (Statement st = c.createStatement()) {
                st.execute(CheckStatements.NO_STATEMENT_TIMEOUT);
                st.execute(checks.validate(Identifiers.quote(name)));
                c.commit();
            } catch (SQLException e) {
                Jdbc.rollbackQuietly(c);
                if (PgErrors.is(e, PgErrors.CHECK_VIOLATION)) {
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
            st.execute(statements.lockTable());
            long late = Jdbc.queryLong(c, statements.countRowsFrom(), bound).orElse(0);
            if (late > 0) {
                throw new OutboxException(schema + " cannot be partitioned by time: " + late + " rows have event"
                        + " ids at or after " + bound + " (" + PartitionBounds.instantOf(bound)
                        + "), so they are not UUIDv7 ids of the past. A partitioned outbox files every row by"
                        + " the time in its UUIDv7 event id: leave event ids to txoutbox (or give UUIDv7s), and keep"
                        + " the plain table with batched-delete retention until those rows are gone; the table is"
                        + " unchanged", null, false);
            }
            TableDefinition d = TableDefinition.read(c, schema, parent);
            st.execute(statements.renameTable(legacy));
            if (d.sequence != null) {
                st.execute(statements.renameSequence(d.sequence, legacy + "_id_seq"));
            }
            st.execute(statements.renameLegacyConstraint(d.pkName, legacyName(d.pkName, 0)));
            for (int i = 0; i < d.indexes.size(); i++) {
                st.execute(statements.renameIndex(d.indexes.get(i)[0], legacyName(d.indexes.get(i)[0], i + 1)));
            }
            st.execute(statements.createLikeLegacy());
            d.applyTo(st, c, parent, qualified(legacy + "_id_seq"));
            st.execute(statements.inheritLegacy());
            st.execute(statements.addBoundCheck(bound));
            if (d.comment != null) {
                st.execute(Jdbc.queryString(c, ConversionStatements.FORMAT_TABLE_COMMENT, parent, d.comment));
            }
            TestHooks.hit(TestHooks.CONVERT_BEFORE_SPLIT_COMMIT);
        });
        log.info("txoutbox-partitions: {}: split off {} (event ids before {}); INSERTs go to a new table of the same"
                + " name while the conversion goes on", schema, legacy, bound);
    }

    /** Replaces the legacy table's bound by a later one: its rows all lie before the earlier bound. */
    private void moveBound(Connection c, UUID bound) throws SQLException {
        withLockRetries(c, st -> {
            st.execute(statements.dropBoundCheckIfExists());
            st.execute(statements.addBoundCheck(bound));
        });
    }

    /**
     * Step 3: moves published rows written since the split (ids before the bound) into the legacy table, one batch per
     * transaction, until a batch comes back short. Published rows only: the relay does not touch them again, so no
     * mark can miss a row that moved under it; pending and failed rows are copied by the swap.
     */
    private long moveRows(Connection c, UUID bound) throws SQLException {
        String columns = PartitionCatalog.insertableColumns(c, parent);
        String sql = statements.moveRowsBatch(columns, MOVE_BATCH);
        long moved = 0;
        for (int batch = 1; ; batch++) {
            int n;
            try (PreparedStatement ps = c.prepareStatement(sql)) {
                Jdbc.queryString(c, PartitionStatements.SET_LOCAL_LOCK_TIMEOUT,
                        PartitionStatements.millis(STEP_LOCK_TIMEOUT));
                ps.setObject(1, bound);
                n = ps.executeUpdate();
                c.commit();
            } catch (SQLException e) {
                Jdbc.rollbackQuietly(c);
                if (!PgErrors.is(e, PgErrors.LOCK_NOT_AVAILABLE)) {
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
        withLockRetries(c, st -> {
            st.execute(statements.lockTable());
            st.execute(statements.lockLegacy());
            if (!PartitionCatalog.validated(c, qualified(legacy), check)) {
                // without it ATTACH would scan the legacy table under ACCESS EXCLUSIVE: never
                throw new OutboxException("the check " + check + " of " + legacy + " is not validated; migrate"
                        + " again to finish converting " + schema, null, true);
            }
            TableDefinition d = TableDefinition.read(c, schema, parent);
            String columns = PartitionCatalog.insertableColumns(c, parent);
            st.execute(statements.noInheritLegacy());
            st.execute(statements.renameTable(window));
            if (d.sequence != null) {
                st.execute(statements.renameSequence(d.sequence, shortName(window, "_id_seq")));
            }
            // free the names of the indexes for the partitioned table; the table goes at the end of this transaction
            st.execute(statements.dropConstraint(window, d.pkName));
            for (String[] index : d.indexes) {
                st.execute(statements.dropIndex(index[0]));
            }
            st.execute(statements.createPartitionedLike(window));
            d.applyTo(st, c, parent, qualified(shortName(window, "_id_seq")));
            // PostgreSQL 17 and later refuse to attach a partition with an identity of its own (the parent's applies
            // to it once attached); its sequence has handed out no id since the split
            st.execute(statements.dropLegacyIdentity());
            st.execute(statements.attachLegacy(bound));
            st.execute(statements.dropBoundCheck());
            st.execute(statements.createDefaultPartition());
            // ON CONFLICT: while split, an INSERT could repeat the event id of a row written before the split (the
            // two tables' keys are apart); the event is there already, its copy goes
            st.execute(statements.copyFrom(window, columns));
            st.execute(statements.dropTable(window));
            st.execute(statements.commentPartitioned(partitioning.period().name().toLowerCase(), schema.shards()));
            TestHooks.hit(TestHooks.CONVERT_BEFORE_SWAP_COMMIT);
        });
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
        return statements.qualified(name);
    }

    // ------------------------------------------------------------------------------------------------- plumbing

    private interface Work {
        void run(Statement st) throws SQLException;
    }

    /** Runs {@code work} in one transaction with a 1 s lock_timeout, retried on lock timeouts. */
    private void withLockRetries(Connection c, Work work) throws SQLException {
        for (int attempt = 1; ; attempt++) {
            try (Statement st = c.createStatement()) {
                Jdbc.queryString(c, PartitionStatements.SET_LOCAL_LOCK_TIMEOUT,
                        PartitionStatements.millis(STEP_LOCK_TIMEOUT));
                work.run(st);
                c.commit();
                return;
            } catch (SQLException e) {
                Jdbc.rollbackQuietly(c);
                // a deadlock with a session that read the table before this step locked it: it let go, try again
                if (!PgErrors.isLockBusy(e) || attempt == LOCK_ATTEMPTS) {
                    throw e;
                }
                log.info("txoutbox-partitions: {} is busy ({}), attempt {} of {}", schema,
                        PgErrors.is(e, PgErrors.LOCK_NOT_AVAILABLE) ? "lock timeout" : "deadlock", attempt,
                        LOCK_ATTEMPTS);
            }
        }
    }

    /** The conversion's session lock: waits for it ({@code wait}) or tries once; commits either way. */
    private boolean advisoryLock(Connection c, boolean wait) throws SQLException {
        boolean got = true;
        if (wait) {
            lock.lock(c);
        } else {
            got = lock.tryLock(c);
        }
        c.commit();
        return got;
    }

    private void advisoryUnlock(Connection c) throws SQLException {
        Jdbc.rollbackQuietly(c);
        lock.unlock(c);
        c.commit();
    }

    private static void restore(Connection c, boolean autoCommit) {
        try {
            c.setAutoCommit(autoCommit);
        } catch (SQLException ignored) {
            // the connection is broken; the caller finds out
        }
    }
}
