package io.txoutbox.internal.pg;

import io.txoutbox.EventFilter;
import io.txoutbox.FailedState;
import io.txoutbox.OutboxSchema;
import io.txoutbox.internal.pg.OperatorStatements.Bound;
import io.txoutbox.internal.pg.OperatorStatements.Change;
import java.util.List;
import java.util.Set;
import java.util.function.UnaryOperator;

/**
 * The statements of {@code OutboxAdmin}: what operators list (failed events, one event) and change (requeue,
 * discard, skip). Every change's first bind parameter is the operator (null: the database user).
 */
public final class AdminStatements {

    /** The columns of a {@code FailedEvent}, in its order (see {@code OperatorCalls#failedEvent}). */
    private final String failedEventColumns;
    private final String table;

    /** {@code pending}: the progress model's predicate of a pending row, given a table alias (null: none). */
    public AdminStatements(OutboxSchema schema, UnaryOperator<String> pending) {
        String t = schema.qualifiedOutboxTable();
        this.table = t;
        // waiting: the pending events of a parked head's key behind it (through the pending index: id, shard)
        this.failedEventColumns = """
                p.id, p.event_id, NULL::text, p.state, p.partition_key, p.topic, p.event_type, p.attempts, \
                p.last_error, p.created_at, p.failed_at, CASE WHEN p.state = %2$s AND p.partition_key IS NOT NULL \
                THEN (SELECT count(*) FROM %1$s w WHERE %3$s AND w.shard = p.shard \
                AND w.partition_key = p.partition_key AND w.id > p.id) ELSE 0 END, \
                p.operator_action, p.operator_name, p.operator_at""".formatted(t, EventState.PARKED.sql(),
                pending.apply("w"));
    }

    /** One event, its payload only when asked (binds: with payload, event id); columns of an {@code EventDetails}. */
    public String show() {
        return """
                SELECT id, event_id, NULL::text, state, topic, partition_key, shard, aggregate_type, aggregate_id, \
                aggregate_version, event_type, headers::text, created_at, attempts, next_attempt_at, last_error, \
                failed_at, published_at, operator_action, operator_name, operator_at, \
                CASE WHEN ? THEN coalesce(convert_to(payload::text, 'UTF8'), payload_bytes) END \
                FROM %s WHERE event_id = ?""".formatted(table);
    }

    /**
     * Changes the given events that are still in one of the given states (binds: operator, event ids, states). Due
     * now after a requeue with a {@code next_attempt_at}, not NULL: the row is then in the index of rows that back
     * off, which the relay's claim starts from, so it goes out before the later events of its key even when the claim
     * floor has gone past it (a parked key does not hold the floor back).
     */
    public String change(Change change) {
        return "UPDATE " + table + " SET " + OperatorStatements.set(change, EventState.PENDING.sql(),
                EventState.DEAD.sql(), EventState.DISCARDED.sql(), "now()")
                + " WHERE event_id = ANY(?) AND state = ANY(?)";
    }


    /** A page of {@code FailedEvent} rows matching {@code f}, in id order after {@code afterId}. */
    public Bound list(EventFilter f, long afterId, int limit) {
        return matching(failedEventColumns, f.states(), f, afterId, limit);
    }

    /** A page of {@code event_id, id} of the rows in {@code states} matching {@code f}'s other criteria. */
    public Bound matchingIds(Set<FailedState> states, EventFilter f, long afterId, int limit) {
        return matching("p.event_id, p.id", states, f, afterId, limit);
    }

    private Bound matching(String columns, Set<FailedState> states, EventFilter f, long afterId, int limit) {
        StringBuilder sql = new StringBuilder("SELECT ").append(columns).append(" FROM ").append(table)
                .append(" p WHERE ").append(OperatorStatements.states("p", states, s -> EventState.valueOf(s).sql()))
                .append(" AND p.id > ?");
        List<Object> binds = OperatorStatements.binds(afterId);
        OperatorStatements.criteria(sql, binds, f, "p", "topic", "created_at");
        sql.append(" ORDER BY p.id LIMIT ?");
        binds.add(limit);
        return new Bound(sql.toString(), binds);
    }
}
