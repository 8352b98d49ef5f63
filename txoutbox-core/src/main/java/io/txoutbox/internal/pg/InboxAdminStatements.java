package io.txoutbox.internal.pg;


/**
 * The statements of the inbox's operations ({@code DefaultInboxAdmin}): listings, retry and skip, counts, purge.
 * The schema name is validated and quoted; values are bind parameters; states are quoted literals
 * ({@link InboxState}), which the partial indexes need.
 */
public final class InboxAdminStatements {

    private final String schemaName;
    private final String parkedKeys;
    private final String deadEvents;
    private final String retryNow;
    private final String skip;
    private final String pendingCount;
    private final String backlogPending;
    private final String backlogFailed;
    private final String purgeProcessedEvents;
    private final String purgeProcessedInbox;

    public InboxAdminStatements(String schema) {
        this.schemaName = schema;
        String s = Identifiers.quote(schema);
        String inbox = s + ".inbox_event";
        String processed = s + ".processed_event";
        String pending = InboxState.PENDING.sql();
        String parked = InboxState.PARKED.sql();
        String dead = InboxState.DEAD.sql();

        // A consumer's parked keys, oldest first, each with the number of its events waiting behind it.
        this.parkedKeys = """
                SELECT p.partition_key, p.event_id, p.event_type, p.attempts, p.last_error, p.received_at,
                 (SELECT count(*) FROM %1$s w WHERE w.consumer = p.consumer AND w.state = %2$s
                 AND w.partition_key = p.partition_key AND w.id > p.id) FROM %1$s p
                 WHERE p.consumer = ? AND p.state = %3$s ORDER BY p.id LIMIT ?"""
                .formatted(inbox, pending, parked);

        // A consumer's dead events, oldest first.
        this.deadEvents = """
                SELECT event_id, partition_key, event_type, attempts, last_error, received_at FROM %s
                 WHERE consumer = ? AND state = %s ORDER BY id LIMIT ?""".formatted(inbox, dead);

        // An operator's retry: a parked or dead event is pending again, due now, with a fresh attempt count.
        this.retryNow = """
                UPDATE %s SET state = %s, attempts = 0, next_attempt_at = NULL
                 WHERE consumer = ? AND event_id = ? AND state IN (%s, %s)""".formatted(inbox, pending, parked, dead);

        // An operator's skip: a parked event is dead; its key moves on.
        this.skip = """
                UPDATE %s SET state = %s, next_attempt_at = NULL,
                 last_error = coalesce(last_error, '') || ' [skipped by an operator]'
                 WHERE consumer = ? AND event_id = ? AND state = %s""".formatted(inbox, dead, parked);

        // A consumer's pending events.
        this.pendingCount = """
                SELECT count(*) FROM %s WHERE consumer = ? AND state = %s""".formatted(inbox, pending);

        // Each backlog predicate repeats its partial index's (V2 pending, V5 failed) so the planner uses it.
        // The backlog's pending part: per consumer, the count and the oldest's age (µs).
        this.backlogPending = """
                SELECT consumer, count(*),
                 greatest(0, (extract(epoch FROM now() - min(received_at)) * 1000000)::bigint)
                 FROM %s WHERE state = %s GROUP BY consumer""".formatted(inbox, pending);

        // The backlog's failed part: per consumer, parked and dead counts.
        this.backlogFailed = """
                SELECT consumer, count(*) FILTER (WHERE state = %2$s),
                 count(*) FILTER (WHERE state = %3$s) FROM %1$s
                 WHERE state IN (%2$s, %3$s) GROUP BY consumer""".formatted(inbox, parked, dead);

        // One purge batch of processed_event rows older than the age (ms) bound; binds age, batch size.
        this.purgeProcessedEvents = """
                DELETE FROM %1$s WHERE ctid = ANY(ARRAY(SELECT ctid FROM
                 %1$s WHERE processed_at < now() - ? * interval '1 ms' LIMIT ?))""".formatted(processed);

        // One purge batch of processed inbox rows older than the age (ms) bound; binds age, batch size.
        this.purgeProcessedInbox = """
                DELETE FROM %1$s WHERE ctid = ANY(ARRAY(SELECT ctid FROM %1$s
                 WHERE state = %2$s AND processed_at < now() - ? * interval '1 ms' LIMIT ?))"""
                .formatted(inbox, InboxState.PROCESSED.sql());
    }

    /** The schema's name, unquoted. */
    public String schemaName() {
        return schemaName;
    }

    /** Binds consumer, limit. */
    public String parkedKeys() {
        return parkedKeys;
    }

    /** Binds consumer, limit. */
    public String deadEvents() {
        return deadEvents;
    }

    /** Binds consumer, event id. */
    public String retryNow() {
        return retryNow;
    }

    /** Binds consumer, event id. */
    public String skip() {
        return skip;
    }

    /** Binds consumer. */
    public String pendingCount() {
        return pendingCount;
    }

    /** Rows of (consumer, pending, oldest pending's age in µs). */
    public String backlogPending() {
        return backlogPending;
    }

    /** Rows of (consumer, parked, dead). */
    public String backlogFailed() {
        return backlogFailed;
    }

    /** Binds age (ms), batch size. */
    public String purgeProcessedEvents() {
        return purgeProcessedEvents;
    }

    /** Binds age (ms), batch size. */
    public String purgeProcessedInbox() {
        return purgeProcessedInbox;
    }
}
