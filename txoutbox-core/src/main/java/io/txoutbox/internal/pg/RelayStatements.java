package io.txoutbox.internal.pg;

import io.txoutbox.OutboxSchema;

/**
 * The polling relay's SQL for PostgreSQL around its lanes' claim and mark (which the progress model owns:
 * {@code io.txoutbox.internal.progress}): the claim floor's reads, membership, fencing, installation id and its session
 * statements. Identifiers are validated and quoted; values are bind parameters.
 */
public final class RelayStatements {

    /** The columns the relay's record mapping reads, first in a SELECT, in this order. */
    public static final String RECORD_COLUMNS = "id, event_id, topic, partition_key, aggregate_type, aggregate_id,"
            + " aggregate_version, event_type, payload::text, payload_bytes, headers::text, created_at, attempts";

    /**
     * A partitioned table: the mark transaction plans generically. The lanes plan every statement for its parameters
     * (custom plans), and for an {@code id = ANY(…)} over many partitions that planning alone costs about as much as
     * the execution; the cached generic plan costs almost none (BENCHMARKS.md, section 4c).
     */
    public static final String GENERIC_PLANS = "SET LOCAL plan_cache_mode = force_generic_plan";

    /**
     * Lane session: no JIT. The claim's per-row probe of the waiting index is costed per candidate (about 68,000 for
     * a full batch): past jit_above_cost JIT compilation alone took longer than the claim (RELIABILITY.md, "Parked
     * keys and the claim").
     */
    public static final String JIT_OFF = "SET jit = off";

    /** Whether the server records commit timestamps (a server setting: it changes only with a restart). */
    public static final String TRACK_COMMIT_TIMESTAMP = "SELECT current_setting('track_commit_timestamp')";

    /**
     * Claim floor: the outbox's id sequence, its cache and increment (no row: no identity sequence). Binds: the
     * qualified outbox table.
     */
    public static final String FLOOR_SEQUENCE = """
            SELECT s.seqrelid::regclass::text, s.seqcache, s.seqincrement FROM pg_sequence s \
            WHERE s.seqrelid = pg_get_serial_sequence(?, 'id')::regclass""";

    /**
     * Claim floor: the other transactions that may still commit a row of the outbox (one virtual transaction id a
     * row). RowExclusiveLock is what every INSERT takes (also in a transaction that holds a stronger lock): readers,
     * vacuum and index builds hold other modes and must not hold the floor back while they run. Binds: the qualified
     * outbox table.
     */
    public static final String FLOOR_WRITERS = """
            SELECT DISTINCT virtualtransaction FROM pg_locks WHERE locktype = 'relation' \
            AND mode = 'RowExclusiveLock' \
            AND database = (SELECT oid FROM pg_database WHERE datname = current_database()) \
            AND relation = ?::regclass \
            AND pid IS DISTINCT FROM pg_backend_pid()""";

    /**
     * Fencing: whether this session holds a one-bigint advisory lock. Binds: the key's high half (classid), its low
     * half (objid).
     */
    public static final String HOLDS_LOCK = """
            SELECT EXISTS (SELECT FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid() AND granted \
            AND objsubid = 1 AND classid::bigint = ? AND objid::bigint = ?)""";

    /**
     * Membership: the caps of the live members with one lane count, one row per member (their member locks, {@link
     * AdvisoryLocks#relayMember}: {@code 3 << 28 | lanes << 14 | cap} in the low half). Binds: the table's key half
     * ({@link #tableKeyHalf}), {@link AdvisoryLocks#KIND_MEMBER}, the lane count.
     */
    public static final String MEMBER_CAPS = """
            SELECT (objid::bigint & 16383)::int FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 1 \
            AND granted AND classid::bigint = ? \
            AND (objid::bigint >> 28) = ? \
            AND ((objid::bigint >> 14) & 16383) = ?""";

    /** Stops the notifications of the wake-up connection. */
    public static final String UNLISTEN_ALL = "UNLISTEN *";

    private final OutboxSchema schema;
    private final String installationTable;
    private final String readInstallation;

    public RelayStatements(OutboxSchema schema) {
        this.schema = schema;
        this.installationTable = Identifiers.quote(schema.schema()) + "."
                + Identifiers.quote(schema.outboxTable() + "_installation");
        this.readInstallation = "SELECT id, current_database() FROM " + installationTable;
    }

    public OutboxSchema schema() {
        return schema;
    }

    /** The table that holds the outbox's installation id (schema version 8). */
    public String installationTable() {
        return installationTable;
    }

    /** The installation id and the database's name. */
    public String readInstallation() {
        return readInstallation;
    }

    /**
     * Wake-up: listens on the outbox's channel. A channel name cannot be a bind parameter; this one is built from
     * validated identifiers.
     */
    public String listen() {
        return "LISTEN \"" + schema.notifyChannel() + "\"";
    }

    /** The high half of the relay's lock keys as {@code pg_locks.classid} shows it (unsigned), for binds. */
    public long tableKeyHalf() {
        return Integer.toUnsignedLong(AdvisoryLocks.relayTableHash(schema));
    }
}
