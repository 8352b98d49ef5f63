package io.txoutbox.internal;

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
import io.txoutbox.internal.partition.PartitionedOutbox;
import java.time.Duration;
import java.time.Instant;
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
 * wait for each other instead of failing. Applied versions are recorded per outbox table in
 * {@code <schema>.txoutbox_schema_history} with the script's checksum; a script that changed after it was applied is
 * refused rather than silently skipped.
 */
public final class SchemaMigrator {

    private static final Logger log = LoggerFactory.getLogger(SchemaMigrator.class);
    static final String SCRIPT_ROOT = "io/txoutbox/db/postgresql/";
    /** The scripts, in order. A new version is added here and as a resource. */
    public static final List<String> SCRIPTS =
            List.of("V1__outbox.sql", "V2__inbox.sql", "V3__operations.sql", "V4__replay.sql",
                    "V5__inbox_status.sql");
    /** Advisory lock namespace: "txob" in ASCII. */
    private static final int LOCK_NAMESPACE = 0x74786F62;

    private static final Duration PARTITION_LOCK_TIMEOUT = Duration.ofSeconds(1);

    private final OutboxSchema schema;

    public SchemaMigrator(OutboxSchema schema) {
        this.schema = schema;
    }

    public void migrate(Connection c) {
        String history = Identifiers.quote(schema.schema()) + ".txoutbox_schema_history";
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
            try (PreparedStatement lock = c.prepareStatement("SELECT pg_advisory_xact_lock(?, ?)")) {
                lock.setInt(1, LOCK_NAMESPACE);
                lock.setInt(2, schema.schema().hashCode());
                lock.execute();
            }
            try (Statement st = c.createStatement()) {
                st.execute("CREATE SCHEMA IF NOT EXISTS " + Identifiers.quote(schema.schema()));
                st.execute("CREATE TABLE IF NOT EXISTS " + history + " ("
                        + "outbox_table text NOT NULL, version integer NOT NULL, description text NOT NULL, "
                        + "checksum bigint NOT NULL, shards integer NOT NULL, "
                        + "installed_at timestamptz NOT NULL DEFAULT now(), "
                        + "installed_by text NOT NULL DEFAULT current_user, PRIMARY KEY (outbox_table, version))");
            }
            Map<Integer, Long> applied = new HashMap<>();
            Integer appliedShards = null;
            try (PreparedStatement ps = c.prepareStatement(
                    "SELECT version, checksum, shards FROM " + history + " WHERE outbox_table = ?")) {
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
                try (PreparedStatement ps = c.prepareStatement("INSERT INTO " + history
                        + " (outbox_table, version, description, checksum, shards) VALUES (?, ?, ?, ?, ?)")) {
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
            if (schema.isPartitioned()) {
                partition(c);
            }
        } catch (SQLException e) {
            rollbackQuietly(c);
            throw new OutboxException("migration of " + schema + " failed: " + e.getMessage()
                    + " (SQLState " + e.getSQLState() + "); nothing was changed", e, SqlErrors.isRetriable(e));
        } catch (RuntimeException e) {
            rollbackQuietly(c);
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

    /** Converts the table into a partitioned one if it is not yet, and creates the partitions ahead. */
    private void partition(Connection c) throws SQLException {
        PartitionedOutbox table = new PartitionedOutbox(schema);
        table.convert(c, Instant.now());
        List<String> notCreated = new ArrayList<>();
        List<String> created = table.createAhead(c, Instant.now(), PARTITION_LOCK_TIMEOUT, notCreated);
        c.commit();
        if (!created.isEmpty()) {
            log.info("txoutbox-migrate: created partitions {} of {}", created, schema);
        }
        notCreated.forEach(reason -> log.warn("txoutbox-migrate: {}", reason));
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

    private static void rollbackQuietly(Connection c) {
        try {
            c.rollback();
        } catch (SQLException ignored) {
            // nothing more to do: the original failure is reported
        }
    }
}
