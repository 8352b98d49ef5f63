package io.txoutbox.internal;

import io.txoutbox.internal.pg.ReadCommitted;
import io.txoutbox.OutboxException;
import io.txoutbox.OutboxSchema;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import io.txoutbox.internal.inbox.InboxKeyBackfill;
import io.txoutbox.internal.partition.PartitionedOutbox;
import io.txoutbox.internal.pg.AdvisoryLocks;
import io.txoutbox.internal.pg.Jdbc;
import io.txoutbox.internal.pg.PgErrors;
import io.txoutbox.internal.pg.SchemaStatements;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.zip.CRC32;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Applies the versioned scripts in {@code io/txoutbox/db/postgresql} ({@code V<n>__<description>.sql}, Flyway names
 * and placeholders) in one transaction, serialised by a transaction-scoped advisory lock so concurrent migrations
 * wait for each other instead of failing; then, after that transaction committed, the versions' {@link OnlineStep}s
 * (validations, backfills), each in short transactions of its own. Applied versions are recorded per outbox table in
 * {@code <schema>.txoutbox_schema_history} with the script's checksum; a script that changed after it was applied is
 * refused rather than silently skipped.
 */
public final class SchemaMigrator {

    private static final Logger log = LoggerFactory.getLogger(SchemaMigrator.class);
    static final String SCRIPT_ROOT = "io/txoutbox/db/postgresql/";
    /** The scripts, in order. A new version is added here and as a resource. */
    public static final List<String> SCRIPTS =
            List.of("V1__outbox.sql", "V2__inbox.sql", "V3__operations.sql", "V4__replay.sql",
                    "V5__inbox_status.sql", "V6__inbox_bytes.sql", "V7__reserved_headers.sql",
                    "V8__installation.sql", "V9__backoff_index.sql", "V10__inbox_operations.sql",
                    "V11__cursor_progress.sql");
    /**
     * Online steps by schema version: work that must not run in the scripts' transaction (it scans or rewrites rows
     * of a live table). Run after that transaction commits, on every migrate, for every applied version, in version
     * order; each step is idempotent and finds its own remaining work (see {@link OnlineStep}).
     */
    static final Map<Integer, List<OnlineStep>> ONLINE_STEPS = onlineSteps(InboxKeyBackfill.DEFAULT_PAGES_PER_BATCH);

    /** V6: the inbox's key bytes of rows stored before it (readers do not wait for it); V7: validate the checks. */
    private static Map<Integer, List<OnlineStep>> onlineSteps(int backfillPagesPerBatch) {
        return Map.of(
                6, List.of((c, schema) -> backfillInboxKeys(c, schema, backfillPagesPerBatch)),
                7, List.of(new ValidateChecks(MessageRules.RESERVED_HEADER_CONSTRAINTS, "they are PENDING rows no relay"
                        + " has tried yet whose headers use a reserved name; the relay parks their keys when it reaches"
                        + " them. Rename the header in those rows (UPDATE ... SET headers = ...) to have them sent, or"
                        + " discard them with OutboxAdmin.discard once they are parked (a requeue without renaming"
                        + " parks them again)")));
    }

    /**
     * Nothing reads {@code key_bytes} as required (a NULL is the UTF-8 of {@code partition_key}), so a backfill that
     * fails is logged, not thrown: the schema is migrated, and the next migrate resumes it.
     */
    private static String backfillInboxKeys(Connection c, OutboxSchema schema, int pagesPerBatch) {
        try {
            InboxKeyBackfill.Result r = new InboxKeyBackfill(schema.schema(), pagesPerBatch).run(c);
            return r.done() ? null : InboxKeyBackfill.STEP + " is not finished (" + r.rows() + " rows in " + r.batches()
                    + " batches by this migrate, or it runs in another one); the next migrate resumes it";
        } catch (SQLException | RuntimeException e) {
            Jdbc.rollbackQuietly(c);
            return InboxKeyBackfill.STEP + " did not finish (" + e + "); the next migrate resumes it";
        }
    }

    private static final Duration PARTITION_LOCK_TIMEOUT = Duration.ofSeconds(1);

    private final OutboxSchema schema;
    private final SchemaStatements statements;
    private final Map<Integer, List<OnlineStep>> onlineSteps;
    /** The time of a partition conversion's bound and of the partitions created ahead. */
    private final Clock clock;

    public SchemaMigrator(OutboxSchema schema) {
        this(schema, Clock.systemUTC(), InboxKeyBackfill.DEFAULT_PAGES_PER_BATCH);
    }

    public SchemaMigrator(OutboxSchema schema, Clock clock) {
        this(schema, clock, InboxKeyBackfill.DEFAULT_PAGES_PER_BATCH);
    }

    /** With the heap pages per transaction of the online backfills (tests use small batches). */
    public SchemaMigrator(OutboxSchema schema, int backfillPagesPerBatch) {
        this(schema, Clock.systemUTC(), backfillPagesPerBatch);
    }

    private SchemaMigrator(OutboxSchema schema, Clock clock, int backfillPagesPerBatch) {
        this.schema = schema;
        this.statements = new SchemaStatements(schema);
        this.clock = clock;
        this.onlineSteps = backfillPagesPerBatch == InboxKeyBackfill.DEFAULT_PAGES_PER_BATCH
                ? ONLINE_STEPS : onlineSteps(backfillPagesPerBatch);
    }

    /** The newest version of the scripts: the number of the last one. */
    public static int latestVersion() {
        return versionOf(SCRIPTS.get(SCRIPTS.size() - 1));
    }

    /** See {@link OutboxSchema#appliedVersion}: migrate's history first, then Flyway's; 0 when neither has any. */
    public static int appliedVersion(Connection c, OutboxSchema schema) throws SQLException {
        SchemaStatements sql = new SchemaStatements(schema);
        if (exists(c, sql.historyTable())) {
            int version = (int) Jdbc.queryLong(c, sql.highestVersion(), schema.outboxTable()).orElse(0);
            if (version > 0) {
                return version;
            }
        }
        if (exists(c, sql.flywayHistoryTable())) {
            return (int) Jdbc.queryLong(c, sql.highestFlywayVersion()).orElse(0);
        }
        return 0;
    }

    private static boolean exists(Connection c, String table) throws SQLException {
        return Jdbc.queryBoolean(c, SchemaStatements.TABLE_EXISTS, table);
    }

    public void migrate(Connection c) {
        boolean autoCommit = true;
        int isolation = Connection.TRANSACTION_READ_COMMITTED;
        try {
            autoCommit = c.getAutoCommit();
            if (autoCommit) {
                // a second instance waits for the lock below and must then read the first one's history, which a
                // snapshot taken before the wait (REPEATABLE READ, SERIALIZABLE) would not show
                isolation = ReadCommitted.pin(c);
            }
            c.setAutoCommit(false);
            AdvisoryLocks.migration(schema.schema()).lockForTransaction(c);
            try (Statement st = c.createStatement()) {
                st.execute(statements.createSchema());
                st.execute(statements.createHistory());
            }
            Map<Integer, Long> applied = new HashMap<>();
            Integer appliedShards = null;
            try (PreparedStatement ps = c.prepareStatement(statements.appliedVersions())) {
                ps.setString(1, schema.outboxTable());
                try (ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) {
                        applied.put(rs.getInt(1), rs.getLong(2));
                        appliedShards = rs.getInt(3);
                    }
                }
            }
            if (appliedShards != null && appliedShards != schema.shards()) {
                throw new OutboxException("outbox table " + schema.schema() + "." + schema.outboxTable()
                        + " was created with " + appliedShards + " shards, but the configuration says "
                        + schema.shards() + ": configure shards=" + appliedShards
                        + " (changing the shard count of an existing table is not supported yet)");
            }
            int ran = 0;
            for (String name : SCRIPTS) {
                int version = versionOf(name);
                String template = load(name);
                long checksum = checksum(template);
                Long previous = applied.get(version);
                if (previous != null) {
                    if (previous != checksum) {
                        throw new OutboxException("schema script " + name + " differs from the one applied to "
                                + schema.schema() + "." + schema.outboxTable() + " (checksum " + previous + " vs "
                                + checksum + "): a released script must never change; add a new version instead");
                    }
                    continue;
                }
                try (Statement st = c.createStatement()) {
                    st.execute(render(template));
                }
                try (PreparedStatement ps = c.prepareStatement(statements.recordVersion())) {
                    ps.setString(1, schema.outboxTable());
                    ps.setInt(2, version);
                    ps.setString(3, descriptionOf(name));
                    ps.setLong(4, checksum);
                    ps.setInt(5, schema.shards());
                    ps.executeUpdate();
                }
                ran++;
            }
            c.commit();
            if (ran > 0) {
                log.info("txoutbox-migrate: applied {} script(s) to {}", ran, schema);
            } else {
                log.debug("txoutbox-migrate: {} is up to date", schema);
            }
            onlineSteps(c);
            if (schema.isPartitioned()) {
                partition(c);
            }
        } catch (SQLException e) {
            Jdbc.rollbackQuietly(c);
            throw new OutboxException("migration of " + schema + " failed: " + e.getMessage()
                    + " (SQLState " + e.getSQLState() + "); nothing was changed", e, PgErrors.isRetriable(e));
        } catch (RuntimeException e) {
            Jdbc.rollbackQuietly(c);
            throw e;
        } finally {
            try {
                c.setAutoCommit(autoCommit);
            } catch (SQLException ignored) {
                // the connection is broken; the caller will find out
            }
            if (autoCommit) {
                ReadCommitted.restore(c, isolation);
            }
        }
    }

    /**
     * Runs the online steps of every version, after the scripts' transaction committed. One migrate of an outbox table
     * runs them at a time (a session advisory lock, tried, not waited for: a second migrate leaves them to the first
     * and returns). A step that cannot finish says why in one warning; the next migrate runs it again.
     */
    private void onlineSteps(Connection c) throws SQLException {
        AdvisoryLocks.Key key = AdvisoryLocks.migrationSteps(schema);
        boolean locked = key.tryLock(c);
        c.commit();
        if (!locked) {
            log.info("txoutbox-migrate: the online steps of {} are running in another session; left to it", schema);
            return;
        }
        try {
            for (String name : SCRIPTS) {
                int version = versionOf(name);
                for (OnlineStep step : onlineSteps.getOrDefault(version, List.of())) {
                    String left;
                    try {
                        left = step.run(c, schema);
                    } catch (SQLException e) {
                        Jdbc.rollbackQuietly(c);
                        throw new OutboxException("the schema scripts of " + schema + " are applied, but the online"
                                + " step of version " + version + " failed: " + e.getMessage() + " (SQLState "
                                + e.getSQLState() + "); the next migrate runs it again", e, PgErrors.isRetriable(e));
                    }
                    if (left != null) {
                        log.warn("txoutbox-migrate: version {} of {} is not complete: {}", version, schema, left);
                    }
                }
            }
        } finally {
            Jdbc.rollbackQuietly(c);
            try {
                key.unlock(c);
                c.commit();
            } catch (SQLException e) {
                log.debug("txoutbox-migrate: unlock failed (the session ends anyway): {}", e.toString());
            }
        }
    }

    /**
     * Converts the table into a partitioned one if it is not yet (or finishes a conversion a failed or killed run left
     * between its steps), and creates the partitions ahead.
     */
    private void partition(Connection c) throws SQLException {
        PartitionedOutbox table = new PartitionedOutbox(schema);
        if (!PartitionedOutbox.isPartitioned(c, schema)) {
            requireNoReservedHeaderViolations(c);
        }
        table.convert(c, clock.instant());
        List<String> notCreated = new ArrayList<>();
        List<String> created = table.createAhead(c, clock.instant(), PARTITION_LOCK_TIMEOUT, notCreated);
        c.commit();
        if (!created.isEmpty()) {
            log.info("txoutbox-migrate: created partitions {} of {}", created, schema);
        }
        notCreated.forEach(reason -> log.warn("txoutbox-migrate: {}", reason));
    }

    /**
     * The conversion validates every NOT VALID check of the plain table (the partitions and their parent must agree on
     * them), so rows that violate a reserved-header constraint would make it fail; say so first, with the fix. Such
     * rows are PENDING rows no relay has tried yet: once the relay has parked them they no longer violate it.
     */
    private void requireNoReservedHeaderViolations(Connection c) throws SQLException {
        java.util.Map<String, Long> violated = ValidateChecks.violations(c, schema.qualifiedOutboxTable(),
                MessageRules.RESERVED_HEADER_CONSTRAINTS);
        c.commit();
        if (!violated.isEmpty()) {
            throw new OutboxException(schema + " is not converted into a partitioned table yet: rows violate the"
                    + " NOT VALID checks " + violated + ", and the conversion needs every check of the table valid."
                    + " They are PENDING rows no relay has tried yet whose headers use a reserved name: the relay"
                    + " parks their keys when it reaches them (then they no longer count), or rename the header in"
                    + " those rows; then migrate again. The table works unchanged meanwhile", null, true);
        }
    }

    /** The script with placeholders filled in, as Flyway would with the same placeholder values. */
    public String render(String template) {
        return template.replace("${schema}", schema.schema())
                .replace("${outbox_table}", schema.outboxTable())
                .replace("${shards}", Integer.toString(schema.shards()));
    }

    static int versionOf(String name) {
        return Integer.parseInt(name.substring(1, name.indexOf("__")));
    }

    static String descriptionOf(String name) {
        return name.substring(name.indexOf("__") + 2, name.length() - 4).replace('_', ' ');
    }

    public static String load(String name) {
        try (InputStream in = SchemaMigrator.class.getClassLoader().getResourceAsStream(SCRIPT_ROOT + name)) {
            if (in == null) {
                throw new IllegalStateException("schema script " + SCRIPT_ROOT + name + " is missing from the jar");
            }
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    static long checksum(String text) {
        CRC32 crc = new CRC32();
        crc.update(text.replace("\r\n", "\n").getBytes(StandardCharsets.UTF_8));
        return crc.getValue();
    }
}
