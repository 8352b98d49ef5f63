package io.txoutbox.internal.pg;

import io.txoutbox.OutboxSchema;
import java.time.Duration;
import java.util.UUID;

/**
 * The statements of the time-partitioned outbox table: its catalog reads and its maintenance (partitions created
 * ahead, expired ones dropped). Built for one outbox table; identifiers are validated and quoted.
 *
 * <p>DDL takes no bind parameters: a partition's bounds are spelled as literals, each rendered by
 * {@link #uuidLiteral} from a {@link UUID} the code computed (never from text a user gave).
 */
public final class PartitionStatements {

    /** The kind of a relation of the schema ({@code p}: partitioned, {@code r}: plain); binds schema, name. */
    public static final String RELKIND = """
            SELECT c.relkind FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
            WHERE n.nspname = ? AND c.relname = ?""";

    /** The partitions of a table with their bound expressions ({@code pg_get_expr}); binds the parent. */
    public static final String PARTITIONS = """
            SELECT p.relname, pg_get_expr(p.relpartbound, p.oid)
            FROM pg_inherits i JOIN pg_class p ON p.oid = i.inhrelid
            WHERE i.inhparent = ?::regclass AND p.relispartition""";

    /** The columns an INSERT ... SELECT copies (not dropped, not generated), in order; binds the relation. */
    public static final String INSERTABLE_COLUMNS = """
            SELECT attname FROM pg_attribute
            WHERE attrelid = ?::regclass AND attnum > 0 AND NOT attisdropped AND attgenerated = ''
            ORDER BY attnum""";

    /**
     * {@code SET LOCAL lock_timeout} with the value bound (SET itself takes no parameter); binds the value, e.g.
     * {@link #millis}.
     */
    public static final String SET_LOCAL_LOCK_TIMEOUT = "SELECT set_config('lock_timeout', ?, true)";

    /** PARKED, DEAD and DISCARDED: the rows a dropped partition hands to the default partition. */
    private static final String FINAL_STATES = "(" + EventState.PARKED.sql() + ", " + EventState.DEAD.sql() + ", "
            + EventState.DISCARDED.sql() + ")";

    private final String schemaName;
    private final String parent;
    private final String pending;

    /** {@code pending}: the progress model's predicate of a pending row, unqualified. */
    public PartitionStatements(OutboxSchema schema, String pending) {
        this.schemaName = schema.schema();
        this.parent = schema.qualifiedOutboxTable();
        this.pending = pending;
    }

    /** A relation of the outbox's schema, quoted. */
    public String qualified(String name) {
        return Identifiers.quote(schemaName) + "." + Identifiers.quote(name);
    }

    /** A period's partition, made as a plain table first (attaching it does not make writers wait). */
    public String createPartitionTable(String partition) {
        return "CREATE TABLE " + qualified(partition) + " (LIKE " + parent
                + " INCLUDING DEFAULTS INCLUDING GENERATED INCLUDING CONSTRAINTS INCLUDING STORAGE)";
    }

    /** Attaches a period's partition (SHARE UPDATE EXCLUSIVE on the parent); the bounds are literals (DDL). */
    public String attachPartition(String partition, UUID from, UUID to) {
        return "ALTER TABLE " + parent + " ATTACH PARTITION " + qualified(partition) + " FOR VALUES FROM ("
                + uuidLiteral(from) + ") TO (" + uuidLiteral(to) + ")";
    }

    /** Detaches an expired partition (ACCESS EXCLUSIVE on the parent, so under a short lock_timeout). */
    public String detachPartition(String partition) {
        return "ALTER TABLE " + parent + " DETACH PARTITION " + qualified(partition);
    }

    /** Drops a detached partition. */
    public String dropTable(String partition) {
        return "DROP TABLE " + qualified(partition);
    }

    /**
     * {pending rows (as the progress model says), PARKED/DEAD/DISCARDED rows} of one partition, each counted by its
     * partial index.
     */
    public String countPendingAndFinal(String partition) {
        String relation = qualified(partition);
        return "SELECT (SELECT count(*) FROM " + relation + " WHERE " + pending
                + "), (SELECT count(*) FROM " + relation + " WHERE state IN " + FINAL_STATES + ")";
    }

    /** Moves a detached partition's PARKED, DEAD and DISCARDED rows into the default partition, ids kept. */
    public String moveFinalRowsToParent(String partition, String columns) {
        return "INSERT INTO " + parent + " (" + columns + ") OVERRIDING SYSTEM VALUE SELECT " + columns + " FROM "
                + qualified(partition) + " WHERE state IN " + FINAL_STATES;
    }

    /** Rows of the default partition, counted up to a million. */
    public String countDefaultRows(String defaultPartition) {
        return "SELECT count(*) FROM (SELECT 1 FROM " + qualified(defaultPartition) + " LIMIT 1000000) d";
    }

    /** A timeout as {@code set_config} takes it: {@code 1500ms}. */
    public static String millis(Duration d) {
        return d.toMillis() + "ms";
    }

    /**
     * A partition bound as a DDL literal ({@code 'uuid'}): PostgreSQL takes no bind parameter in DDL, so the bound is
     * spelled here, from a UUID value (its canonical text has only hex digits and dashes).
     */
    public static String uuidLiteral(UUID bound) {
        return "'" + bound + "'";
    }
}
