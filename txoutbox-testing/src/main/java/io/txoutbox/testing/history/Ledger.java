package io.txoutbox.testing.history;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.UUID;
import java.util.regex.Pattern;
import javax.sql.DataSource;

/**
 * The writers' ledger in PostgreSQL: {@code ledger_key_seq(key, seq)} holds each key's last seq (its row is the
 * key's lock), {@code ledger(event_id, key, seq, committed_at, writer)} one row per event written in the same
 * transaction as the outbox row — so the ledger holds exactly what committed.
 */
public final class Ledger {

    public static final String KEY_SEQ_TABLE = "ledger_key_seq";
    public static final String LEDGER_TABLE = "ledger";

    private static final Pattern IDENTIFIER = Pattern.compile("[A-Za-z_][A-Za-z0-9_]{0,62}");

    private Ledger() {
    }

    /** The name of key {@code index} (1-based): {@code k-0001}, {@code k-0002}, … */
    public static String keyName(int index) {
        return String.format(Locale.ROOT, "k-%04d", index);
    }

    /**
     * Creates the schema (if missing), both tables (if missing) and a seq row for keys {@code k-0001} to
     * {@code keyName(keys)}, leaving existing rows alone.
     */
    public static void create(DataSource dataSource, String schema, int keys) {
        if (keys < 1) {
            throw new IllegalArgumentException("ledger keys must be >= 1, was " + keys);
        }
        String s = quote(schema);
        try (Connection connection = dataSource.getConnection()) {
            connection.setAutoCommit(true);
            try (Statement statement = connection.createStatement()) {
                statement.execute("CREATE SCHEMA IF NOT EXISTS " + s);
                statement.execute("CREATE TABLE IF NOT EXISTS " + s + "." + KEY_SEQ_TABLE
                        + " (key text PRIMARY KEY, seq bigint NOT NULL)");
                statement.execute("""
                        CREATE TABLE IF NOT EXISTS %s.%s (
                            event_id uuid PRIMARY KEY,
                            key text NOT NULL,
                            seq bigint NOT NULL,
                            committed_at timestamptz NOT NULL DEFAULT clock_timestamp(),
                            writer int,
                            UNIQUE (key, seq))""".formatted(s, LEDGER_TABLE));
            }
            try (PreparedStatement insert = connection.prepareStatement("INSERT INTO " + s + "." + KEY_SEQ_TABLE
                    + " (key, seq) SELECT 'k-' || lpad(i::text, 4, '0'), 0 FROM generate_series(1, ?) i"
                    + " ON CONFLICT (key) DO NOTHING")) {
                insert.setInt(1, keys);
                insert.executeUpdate();
            }
        } catch (SQLException e) {
            throw new IllegalStateException("creating the ledger in schema " + schema + " failed: " + e.getMessage(), e);
        }
    }

    /** Every committed ledger event, ordered by key and seq. */
    public static List<LedgerEntry> read(DataSource dataSource, String schema) {
        String sql = "SELECT event_id, key, seq, committed_at FROM " + quote(schema) + "." + LEDGER_TABLE
                + " ORDER BY key, seq";
        List<LedgerEntry> entries = new ArrayList<>();
        try (Connection connection = dataSource.getConnection();
             Statement statement = connection.createStatement()) {
            if (!connection.getAutoCommit()) {
                connection.setAutoCommit(true);
            }
            statement.setFetchSize(10_000);
            try (ResultSet rows = statement.executeQuery(sql)) {
                while (rows.next()) {
                    entries.add(new LedgerEntry(rows.getObject(1, UUID.class), rows.getString(2), rows.getLong(3),
                            rows.getObject(4, OffsetDateTime.class).toInstant()));
                }
            }
        } catch (SQLException e) {
            throw new IllegalStateException("reading the ledger of schema " + schema + " failed: " + e.getMessage(), e);
        }
        return entries;
    }

    /** Validates a schema name and returns it double-quoted. */
    static String quote(String schema) {
        if (schema == null || !IDENTIFIER.matcher(schema).matches()) {
            throw new IllegalArgumentException("ledger schema must match " + IDENTIFIER + ", was " + schema);
        }
        return '"' + schema + '"';
    }
}
