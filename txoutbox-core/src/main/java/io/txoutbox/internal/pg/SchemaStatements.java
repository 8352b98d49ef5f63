package io.txoutbox.internal.pg;

import io.txoutbox.OutboxSchema;

/**
 * The migrator's bookkeeping: the schema, its history table ({@code <schema>.txoutbox_schema_history}, one row per
 * outbox table and applied version, with the script's checksum). The migration scripts themselves are resources
 * ({@code io/txoutbox/db/postgresql}).
 */
public final class SchemaStatements {

    private final String schemaName;
    private final String history;
    private final String flywayHistory;

    public SchemaStatements(OutboxSchema schema) {
        this.schemaName = Identifiers.quote(schema.schema());
        this.history = schemaName + ".txoutbox_schema_history";
        this.flywayHistory = schemaName + "." + Identifiers.quote(OutboxSchema.FLYWAY_HISTORY_TABLE);
    }

    /** Whether a table exists, by its qualified name (bind: the name, e.g. {@link #historyTable()}). */
    public static final String TABLE_EXISTS = "SELECT to_regclass(?) IS NOT NULL";

    /** {@code <schema>.txoutbox_schema_history}, quoted. */
    public String historyTable() {
        return history;
    }

    /** {@code <schema>.txoutbox_flyway_history}, quoted: the history of the scripts when Flyway applies them. */
    public String flywayHistoryTable() {
        return flywayHistory;
    }

    /** The highest version migrate applied to one outbox table, 0 for none (bind: the table's name). */
    public String highestVersion() {
        return "SELECT coalesce(max(version), 0) FROM " + history + " WHERE outbox_table = ?";
    }

    /** The highest version Flyway applied successfully from the outbox's scripts, 0 for none. */
    public String highestFlywayVersion() {
        return "SELECT coalesce(max(version::int), 0) FROM " + flywayHistory
                + " WHERE success AND version ~ '^[0-9]+$'";
    }

    /** Creates the schema when it is missing. */
    public String createSchema() {
        return "CREATE SCHEMA IF NOT EXISTS " + schemaName;
    }

    /** Creates the history table when it is missing. */
    public String createHistory() {
        return """
                CREATE TABLE IF NOT EXISTS %s (\
                outbox_table text NOT NULL, version integer NOT NULL, description text NOT NULL, \
                checksum bigint NOT NULL, shards integer NOT NULL, \
                installed_at timestamptz NOT NULL DEFAULT now(), \
                installed_by text NOT NULL DEFAULT current_user, PRIMARY KEY (outbox_table, version))"""
                .formatted(history);
    }

    /** The versions applied to one outbox table, with their checksums and shard count (bind: the table's name). */
    public String appliedVersions() {
        return "SELECT version, checksum, shards FROM " + history + " WHERE outbox_table = ?";
    }

    /** Records an applied version (binds: table, version, description, checksum, shards). */
    public String recordVersion() {
        return "INSERT INTO " + history + " (outbox_table, version, description, checksum, shards)"
                + " VALUES (?, ?, ?, ?, ?)";
    }
}
