package io.txoutbox.internal.pg;

import io.txoutbox.EventFilter;
import io.txoutbox.FailedState;
import io.txoutbox.internal.pg.OperatorStatements.Bound;
import io.txoutbox.internal.pg.OperatorStatements.Change;
import java.util.List;
import java.util.Set;

/**
 * The statements of the inbox's operations ({@code DefaultInboxAdmin}): lists, one event, the audited changes
 * (requeue, discard, skip), counts, purge. The schema name is validated and quoted; values are bind parameters;
 * states are quoted literals ({@link InboxState}), which the partial indexes need.
 */
public final class InboxAdminStatements {

    private final String schemaName;
    private final String inbox;
    private final String failedEventColumns;
    private final String show;
    private final String pendingCount;
    private final String backlogPending;
    private final String backlogFailed;
    private final String purgeProcessedEvents;
    private final String purgeProcessedInbox;

    public InboxAdminStatements(String schema) {
        this.schemaName = schema;
        String s = Identifiers.quote(schema);
        String inbox = s + ".inbox_event";
        this.inbox = inbox;
        String processed = s + ".processed_event";
        String pending = InboxState.PENDING.sql();
        String parked = InboxState.PARKED.sql();
        String dead = InboxState.DEAD.sql();

        // The columns of a FailedEvent; waiting: the pending events of a parked head's key behind it.
        this.failedEventColumns = """
                p.id, p.event_id, p.consumer, p.state, p.partition_key, p.source_topic, p.event_type, p.attempts,
                 p.last_error, p.received_at, p.failed_at, CASE WHEN p.state = %2$s AND p.partition_key IS NOT NULL
                 THEN (SELECT count(*) FROM %1$s w WHERE w.consumer = p.consumer AND w.state = %3$s
                 AND w.partition_key = p.partition_key AND w.id > p.id) ELSE 0 END,
                 p.operator_action, p.operator_name, p.operator_at""".formatted(inbox, parked, pending);

        // One event of a consumer, in any state, its payload only when asked; the columns of an EventDetails.
        this.show = """
                SELECT id, event_id, consumer, state, source_topic, partition_key, shard, aggregate_type,
                 aggregate_id, aggregate_version, event_type, headers::text, received_at, attempts, next_attempt_at,
                 last_error, failed_at, processed_at, operator_action, operator_name, operator_at,
                 CASE WHEN ? THEN payload END FROM %s WHERE consumer = ? AND event_id = ?""".formatted(inbox);

        // A consumer's pending events.
        this.pendingCount = """
                SELECT count(*) FROM %s WHERE consumer = ? AND state = %s""".formatted(inbox, pending);

        // Each backlog predicate repeats its partial index's (V2 pending, V10 failed) so the planner uses it.
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

    /** A page of {@code FailedEvent} rows of the filter's consumer matching it, in id order after {@code afterId}. */
    public Bound list(EventFilter f, long afterId, int limit) {
        return matching(failedEventColumns, f.states(), f, afterId, limit);
    }

    /** A page of {@code event_id, id} of the consumer's rows in {@code states} matching {@code f}'s other criteria. */
    public Bound matchingIds(Set<FailedState> states, EventFilter f, long afterId, int limit) {
        return matching("p.event_id, p.id", states, f, afterId, limit);
    }

    private Bound matching(String columns, Set<FailedState> states, EventFilter f, long afterId, int limit) {
        StringBuilder sql = new StringBuilder("SELECT ").append(columns).append(" FROM ").append(inbox)
                .append(" p WHERE p.consumer = ? AND ")
                .append(OperatorStatements.states("p", states, s -> InboxState.valueOf(s).sql()))
                .append(" AND p.id > ?");
        List<Object> binds = OperatorStatements.binds(f.consumer(), afterId);
        OperatorStatements.criteria(sql, binds, f, "p", "source_topic", "received_at");
        sql.append(" ORDER BY p.id LIMIT ?");
        binds.add(limit);
        return new Bound(sql.toString(), binds);
    }

    /** Binds with payload, consumer, event id. */
    public String show() {
        return show;
    }

    /**
     * Changes the consumer's given events that are still in one of the given states (binds: operator, consumer, event
     * ids, states). A requeued event is due at once (no retry delay: the worker's claim takes it in id order).
     */
    public String change(Change change) {
        return "UPDATE " + inbox + " SET " + OperatorStatements.set(change, InboxState.PENDING.sql(),
                InboxState.DEAD.sql(), InboxState.DISCARDED.sql(), "NULL")
                + " WHERE consumer = ? AND event_id = ANY(?) AND state = ANY(?)";
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
