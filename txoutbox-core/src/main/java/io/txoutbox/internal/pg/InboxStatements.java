package io.txoutbox.internal.pg;


/**
 * The inbox's statements: receiving ({@code DefaultInbox}) and the worker's lanes ({@code WorkerLane}). The schema
 * name is validated and quoted; values are bind parameters; states are quoted literals ({@link InboxState}).
 * Continuation lines start with a space, so every clause keyword stays between spaces (the backend guard of the
 * lane's marks looks for {@code " WHERE "}).
 */
public final class InboxStatements {

    /** The bind parameters of one received row. */
    public static final int INSERT_COLUMNS = 14;
    /** A received row: the key as its text form (partition_key) and its bytes, the headers as text and bytes. */
    private static final String INSERT_COLUMN_LIST = "consumer, event_id, source_topic, source_partition,"
            + " source_offset, partition_key, key_bytes, event_type, aggregate_type, aggregate_id, aggregate_version,"
            + " payload, headers, header_bytes";
    private static final String INSERT_VALUES = "(?,?,?,?,?,?,?,?,?,?,?,?,?::jsonb,?)";

    private final String schemaName;
    private final String inbox;
    private final String insertProcessed;
    private final String applyVersion;
    private final String waitingKeys;
    private final String claim;
    private final String markProcessed;
    private final String recordFailures;
    private final String insertDead;
    private final String insertDeadBare;

    public InboxStatements(String schema) {
        this.schemaName = schema;
        String s = Identifiers.quote(schema);
        this.inbox = s + ".inbox_event";
        String processed = s + ".processed_event";
        String versions = s + ".applied_version";

        // Inbox.once: the dedupe row; no row inserted means a duplicate.
        this.insertProcessed = """
                INSERT INTO %s (consumer, event_id) VALUES (?, ?) ON CONFLICT DO NOTHING""".formatted(processed);

        // Inbox.once with a version: records it unless an equal or newer one is there (no row: stale).
        this.applyVersion = """
                INSERT INTO %s AS v (consumer, aggregate_type, aggregate_id, version)
                 VALUES (?, ?, ?, ?) ON CONFLICT (consumer, aggregate_type, aggregate_id)
                 DO UPDATE SET version = EXCLUDED.version, applied_at = now() WHERE v.version < EXCLUDED.version"""
                .formatted(versions);

        // The lane's keys that wait (parked, or pending with a retry delay) and the id each waits from.
        // Both predicates repeat the partial indexes' so the planner can use them (see RelayStatements).
        this.waitingKeys = """
                SELECT partition_key, min(id) FROM %1$s
                 WHERE consumer = ? AND shard = ANY(?) AND partition_key IS NOT NULL
                 AND (state = %2$s OR (state = %3$s AND next_attempt_at IS NOT NULL))
                 AND (state = %2$s OR next_attempt_at > now()) GROUP BY partition_key"""
                .formatted(inbox, InboxState.PARKED.sql(), InboxState.PENDING.sql());

        // The lane's next batch: pending rows due now, in id order, none of a waiting key from its waiting id on.
        // Column 16 is the event's age at the claim (µs, database clock): the start of its receive→processed latency.
        this.claim = """
                SELECT id, event_id, partition_key, event_type, aggregate_type, aggregate_id, aggregate_version,
                 payload, ARRAY(SELECT key FROM jsonb_each_text(headers) ORDER BY key),
                 ARRAY(SELECT value FROM jsonb_each_text(headers) ORDER BY key),
                 source_topic, source_partition, source_offset, received_at, attempts,
                 greatest(0, (extract(epoch FROM clock_timestamp() - received_at) * 1000000)::bigint),
                 key_bytes, header_bytes
                 FROM %s
                 WHERE consumer = ? AND state = %s AND shard = ANY(?)
                 AND (next_attempt_at IS NULL OR next_attempt_at <= now())
                 AND NOT EXISTS (SELECT 1 FROM unnest(?::text[], ?::bigint[]) AS w(k, from_id)
                 WHERE w.k = partition_key AND id >= w.from_id)
                 ORDER BY id LIMIT ?""".formatted(inbox, InboxState.PENDING.sql());

        // The batch's handled rows (ends with its WHERE condition: the lane's backend guard is appended to it).
        this.markProcessed = """
                UPDATE %s SET state = %s, processed_at = now(),
                 next_attempt_at = NULL WHERE consumer = ? AND state = %s AND id = ANY(?)"""
                .formatted(inbox, InboxState.PROCESSED.sql(), InboxState.PENDING.sql());

        // The batch's failed attempts: error, new state and retry delay per row (ends with its WHERE condition).
        // failed_at: when the event was parked or given up (schema V10), for the admin's filters.
        this.recordFailures = """
                UPDATE %1$s o SET attempts = o.attempts + 1, last_error = f.err,
                 state = f.new_state,
                 next_attempt_at = CASE WHEN f.new_state = %2$s THEN now() + f.delay_ms * interval '1 ms' END,
                 failed_at = CASE WHEN f.new_state IN (%3$s, %4$s) THEN now() ELSE o.failed_at END
                 FROM unnest(?::bigint[], ?::text[], ?::bigint[], ?::text[]) AS f(id, err, delay_ms, new_state)
                 WHERE o.consumer = ? AND o.state = %2$s AND o.id = f.id""".formatted(inbox, InboxState.PENDING.sql(),
                InboxState.PARKED.sql(), InboxState.DEAD.sql());

        // A received record that cannot be stored as it is: kept DEAD (never processed; its key moves on) with why.
        this.insertDead = "INSERT INTO " + inbox + " (" + INSERT_COLUMN_LIST + ", state, failed_at, last_error)"
                + " VALUES " + INSERT_VALUES.substring(0, INSERT_VALUES.length() - 1) + ", " + InboxState.DEAD.sql()
                + ", now(), ?) ON CONFLICT DO NOTHING";

        // ... and when even that row is refused (a constraint on the payload, say): where it came from and why.
        this.insertDeadBare = """
                INSERT INTO %s (consumer, event_id, source_topic, source_partition,
                 source_offset, state, failed_at, last_error) VALUES (?, ?, ?, ?, ?, %s, now(), ?)
                 ON CONFLICT DO NOTHING"""
                .formatted(inbox, InboxState.DEAD.sql());
    }

    /** The schema's name, unquoted. */
    public String schemaName() {
        return schemaName;
    }

    /** Binds consumer, event id: the dedupe row of {@code Inbox.once}. */
    public String insertProcessed() {
        return insertProcessed;
    }

    /** Binds consumer, aggregate type, aggregate id, version. */
    public String applyVersion() {
        return applyVersion;
    }

    /** Binds consumer, shards (integer[]); rows of (partition_key, first waiting id). */
    public String waitingKeys() {
        return waitingKeys;
    }

    /** Binds consumer, shards (integer[]), waiting keys (text[]), their ids (bigint[]), limit. */
    public String claim() {
        return claim;
    }

    /** Binds consumer, ids (bigint[]). */
    public String markProcessed() {
        return markProcessed;
    }

    /** Binds ids (bigint[]), errors (text[]), delays in ms (bigint[]), new states (text[]), consumer. */
    public String recordFailures() {
        return recordFailures;
    }

    /** Binds one row's {@value #INSERT_COLUMNS} values, then last_error. */
    public String insertDead() {
        return insertDead;
    }

    /** Binds consumer, event id, source topic, partition, offset, last_error. */
    public String insertDeadBare() {
        return insertDeadBare;
    }

    /** A multi-row insert of {@code rows} messages; duplicates (also within the statement) are dropped. */
    public String insertInbox(int rows) {
        StringBuilder b = new StringBuilder(200 + rows * 40);
        b.append("INSERT INTO ").append(inbox).append(" (").append(INSERT_COLUMN_LIST).append(") VALUES ");
        for (int i = 0; i < rows; i++) {
            b.append(i == 0 ? "" : ",").append(INSERT_VALUES);
        }
        return b.append(" ON CONFLICT DO NOTHING").toString();
    }

}
