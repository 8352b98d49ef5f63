package io.txoutbox.internal.pg;

import io.txoutbox.OutboxSchema;
import java.util.UUID;

/**
 * The statements of converting the plain outbox table into a partitioned one (split, bound check, move, swap) and
 * the catalog reads that find where a conversion stands. Built for one outbox table and the names the conversion
 * gives its legacy table and that table's bound check; identifiers are validated and quoted. The statements that
 * copy a table's definition (indexes, owner, grants) are in {@link TableDefinitionStatements}.
 *
 * <p>DDL takes no bind parameters: the bound check and the legacy partition's upper bound are spelled as literals by
 * {@link PartitionStatements#uuidLiteral}, from a UUID the code computed.
 */
public final class ConversionStatements {

    /** Whether a relation (which may not exist) is an inheritance child of another; binds child, parent. */
    public static final String IS_INHERITANCE_CHILD =
            "SELECT count(*) FROM pg_inherits WHERE inhrelid = to_regclass(?) AND inhparent = ?::regclass";

    /** A CHECK constraint's definition and whether it is validated; binds relation, constraint name. */
    public static final String CHECK_DEFINITION = """
            SELECT pg_get_constraintdef(oid), convalidated
            FROM pg_constraint WHERE conrelid = ?::regclass AND conname = ? AND contype = 'c'""";

    /** Whether a constraint is validated; binds relation, constraint name. */
    public static final String CONSTRAINT_VALIDATED =
            "SELECT convalidated FROM pg_constraint WHERE conrelid = ?::regclass AND conname = ?";

    /** {@code COMMENT ON TABLE} for a comment read from the catalog, quoted by PostgreSQL; binds table, comment. */
    public static final String FORMAT_TABLE_COMMENT = "SELECT format('COMMENT ON TABLE %s IS %L', ?, ?)";

    private final String schemaName;
    private final String table;
    private final String parent;
    private final String legacy;
    private final String check;

    /**
     * @param legacy the name the plain table takes when it is split off (unquoted)
     * @param check  the name of the legacy table's bound check (unquoted)
     */
    public ConversionStatements(OutboxSchema schema, String legacy, String check) {
        this.schemaName = schema.schema();
        this.table = schema.outboxTable();
        this.parent = schema.qualifiedOutboxTable();
        this.legacy = qualified(legacy);
        this.check = Identifiers.quote(check);
    }

    /** A relation of the outbox's schema, quoted. */
    public String qualified(String name) {
        return Identifiers.quote(schemaName) + "." + Identifiers.quote(name);
    }

    /** Removes the bound check an older release left on the plain table. */
    public String dropLeftoverCheck() {
        return "ALTER TABLE " + parent + " DROP CONSTRAINT IF EXISTS " + check;
    }

    /** Takes ACCESS EXCLUSIVE on the outbox table (the split and the swap change what its name means). */
    public String lockTable() {
        return "LOCK TABLE " + parent + " IN ACCESS EXCLUSIVE MODE";
    }

    /** Takes ACCESS EXCLUSIVE on the legacy table (the swap attaches it). */
    public String lockLegacy() {
        return "LOCK TABLE " + legacy + " IN ACCESS EXCLUSIVE MODE";
    }

    /** Rows of the outbox table with ids at or after a bound, by the primary key's index; binds the bound. */
    public String countRowsFrom() {
        return "SELECT count(*) FROM " + parent + " WHERE event_id >= ?::uuid";
    }

    /** Renames the outbox table (or, in the swap, the split's new table) within its schema. */
    public String renameTable(String newName) {
        return "ALTER TABLE " + parent + " RENAME TO " + Identifiers.quote(newName);
    }

    /** Renames a sequence ({@code qualifiedSequence} as {@code pg_get_serial_sequence} returns it, quoted). */
    public String renameSequence(String qualifiedSequence, String newName) {
        return "ALTER SEQUENCE " + qualifiedSequence + " RENAME TO " + Identifiers.quote(newName);
    }

    /** Renames a constraint of the legacy table. */
    public String renameLegacyConstraint(String name, String newName) {
        return "ALTER TABLE " + legacy + " RENAME CONSTRAINT " + Identifiers.quote(name) + " TO "
                + Identifiers.quote(newName);
    }

    /** Renames an index of the outbox's schema. */
    public String renameIndex(String name, String newName) {
        return "ALTER INDEX " + qualified(name) + " RENAME TO " + Identifiers.quote(newName);
    }

    /** The split's new plain table, of the legacy table's definition. */
    public String createLikeLegacy() {
        return "CREATE TABLE " + parent + " (LIKE " + legacy + " INCLUDING DEFAULTS"
                + " INCLUDING IDENTITY INCLUDING GENERATED INCLUDING CONSTRAINTS INCLUDING STORAGE"
                + " INCLUDING COMMENTS)";
    }

    /** The swap's partitioned table, of the definition of the split's table (now named {@code window}). */
    public String createPartitionedLike(String window) {
        return "CREATE TABLE " + parent + " (LIKE " + qualified(window) + " INCLUDING DEFAULTS"
                + " INCLUDING IDENTITY INCLUDING GENERATED INCLUDING CONSTRAINTS INCLUDING STORAGE"
                + " INCLUDING COMMENTS) PARTITION BY RANGE (event_id)";
    }

    /** Makes the legacy table an inheritance child of the outbox table: reads through the name see its rows. */
    public String inheritLegacy() {
        return "ALTER TABLE " + legacy + " INHERIT " + parent;
    }

    /** Ends the inheritance (the swap attaches the legacy table as a partition instead). */
    public String noInheritLegacy() {
        return "ALTER TABLE " + legacy + " NO INHERIT " + parent;
    }

    /** The legacy table's bound check, NOT VALID (validated later, under SHARE UPDATE EXCLUSIVE); a DDL literal. */
    public String addBoundCheck(UUID bound) {
        return "ALTER TABLE " + legacy + " ADD CONSTRAINT " + check + " CHECK (event_id < "
                + PartitionStatements.uuidLiteral(bound) + "::uuid) NOT VALID";
    }

    /** Removes the legacy table's bound check if it is there (to give it a later bound). */
    public String dropBoundCheckIfExists() {
        return "ALTER TABLE " + legacy + " DROP CONSTRAINT IF EXISTS " + check;
    }

    /** Removes the legacy table's bound check once it is attached (the partition bound holds it now). */
    public String dropBoundCheck() {
        return "ALTER TABLE " + legacy + " DROP CONSTRAINT " + check;
    }

    /**
     * Moves one batch of published rows written since the split (ids before the bound, which it binds) from the
     * outbox table into the legacy table. The batch size stays a literal: a LIMIT parameter is planned as a tenth of
     * the rows under a generic plan, which could turn the batch's index scan into a scan of the table.
     */
    public String moveRowsBatch(String columns, int batch) {
        return """
                WITH m AS (DELETE FROM ONLY %1$s WHERE event_id IN (SELECT event_id FROM ONLY %1$s
                    WHERE state = %2$s AND event_id < ?::uuid LIMIT %3$d FOR UPDATE SKIP LOCKED)
                  RETURNING %4$s)
                INSERT INTO %5$s (%4$s) OVERRIDING SYSTEM VALUE SELECT %4$s FROM m ON CONFLICT DO NOTHING"""
                .formatted(parent, EventState.PUBLISHED.sql(), batch, columns, legacy);
    }

    /** Drops a constraint of a relation of the outbox's schema. */
    public String dropConstraint(String relation, String name) {
        return "ALTER TABLE " + qualified(relation) + " DROP CONSTRAINT " + Identifiers.quote(name);
    }

    /** Drops an index of the outbox's schema. */
    public String dropIndex(String name) {
        return "DROP INDEX " + qualified(name);
    }

    /** Removes the legacy table's own identity (PostgreSQL 17+ refuses to attach a partition that has one). */
    public String dropLegacyIdentity() {
        return "ALTER TABLE " + legacy + " ALTER COLUMN id DROP IDENTITY IF EXISTS";
    }

    /** Attaches the legacy table as the partition of every id before the bound; a DDL literal. */
    public String attachLegacy(UUID bound) {
        return "ALTER TABLE " + parent + " ATTACH PARTITION " + legacy + " FOR VALUES FROM (MINVALUE) TO ("
                + PartitionStatements.uuidLiteral(bound) + ")";
    }

    /** The default partition: rows no period covers. */
    public String createDefaultPartition() {
        return "CREATE TABLE " + qualified(table + "_default") + " PARTITION OF " + parent + " DEFAULT";
    }

    /**
     * Copies the rows written since the split into the partitioned table, ids kept. ON CONFLICT: while split, an
     * INSERT could repeat the event id of a row written before the split (the two tables' keys are apart); the event
     * is there already, its copy goes.
     */
    public String copyFrom(String window, String columns) {
        return "INSERT INTO " + parent + " (" + columns + ") OVERRIDING SYSTEM VALUE SELECT " + columns + " FROM "
                + qualified(window) + " ON CONFLICT DO NOTHING";
    }

    /** Drops a table of the outbox's schema. */
    public String dropTable(String name) {
        return "DROP TABLE " + qualified(name);
    }

    /**
     * The partitioned table's comment. A literal (COMMENT takes no parameter), made of a period's name and the shard
     * count only.
     */
    public String commentPartitioned(String period, int shards) {
        return "COMMENT ON TABLE " + parent + " IS 'txoutbox outbox, partitioned by " + period
                + " of event_id (UUIDv7). Shards: " + shards + ".'";
    }
}
