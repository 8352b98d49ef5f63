package io.txoutbox.internal.pg;

import io.txoutbox.OutboxAdmin.EventFilter;
import io.txoutbox.OutboxSchema;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.function.UnaryOperator;

/**
 * The statements of {@code OutboxAdmin}: what operators list (lane owners, parked keys, dead and failed events, one
 * event) and change (requeue, discard, skip). Every change's first bind parameter is the operator (null: the
 * database user).
 */
public final class AdminStatements {

    /** An operator's change of failed events. */
    public enum Change { REQUEUE, DISCARD, SKIP }

    /** The columns of a page of matching ids: {@code event_id, id}. */
    public static final String MATCHING_IDS = "event_id, id";
    /** The columns of {@code OutboxAdmin.FailedEvent}, in its order. */
    public static final String FAILED_EVENT_COLUMNS = "id, event_id, state, partition_key, topic, event_type,"
            + " attempts, last_error, created_at, failed_at, operator_action, operator_name, operator_at";

    /** The audit columns; the first bind parameter of every change is the operator (null: the database user). */
    private static final String AUDIT = "operator_name = coalesce(?, current_user), operator_at = now()";

    private final String table;
    private final long tableHash;
    /** The progress model's predicate of a pending row, given a table alias (null: none). */
    private final UnaryOperator<String> pending;
    /**
     * Due now with a {@code next_attempt_at}, not NULL: the row is then in the index of rows that back off, which the
     * relay's claim starts from, so it goes out before the later events of its key even when the claim floor has gone
     * past it (a parked key does not hold the floor back).
     */
    private final String requeueSet;
    private final String discardSet;
    private final String skipSet;
    private final String releaseNext;

    /** {@code pending}: the progress model's predicate of a pending row, given a table alias (null: none). */
    public AdminStatements(OutboxSchema schema, UnaryOperator<String> pending) {
        String t = schema.qualifiedOutboxTable();
        this.table = t;
        this.pending = pending;
        this.tableHash = Integer.toUnsignedLong(AdvisoryLocks.relayTableHash(schema));
        this.requeueSet = "state = " + EventState.PENDING.sql() + ", attempts = 0, next_attempt_at = now(),"
                + " operator_action = 'REQUEUED', " + AUDIT;
        this.discardSet = "state = " + EventState.DISCARDED.sql() + ", next_attempt_at = NULL,"
                + " operator_action = 'DISCARDED', " + AUDIT;
        this.skipSet = "state = " + EventState.DEAD.sql() + ", next_attempt_at = NULL,"
                + " last_error = coalesce(last_error, '') || ' [skipped by an operator]', operator_action = 'SKIPPED', "
                + AUDIT;
        // Run before a skip or discard of parked rows (event ids in the array): the next pending event of each one's
        // key becomes due with a next_attempt_at, so the relay's claim starts at it even when the claim floor went past
        // the key's held events while it was parked (see the relay's claim); without it those events would go out
        // only when a claim without floor finds them, after later events of the key.
        this.releaseNext = """
                UPDATE %1$s n SET next_attempt_at = now() FROM (SELECT (SELECT x.event_id FROM %1$s x \
                WHERE %2$s AND x.shard = p.shard AND x.partition_key = p.partition_key \
                AND x.id > p.id ORDER BY x.id LIMIT 1) AS event_id FROM %1$s p \
                WHERE p.event_id = ANY(?) AND p.state = %3$s AND p.partition_key IS NOT NULL) m \
                WHERE n.event_id = m.event_id AND %4$s AND n.next_attempt_at IS NULL"""
                .formatted(t, pending.apply("x"), EventState.PARKED.sql(), pending.apply("n"));
    }

    /** The relay's lane locks held now, with their sessions (binds: {@link #laneOwnerBinds()}). */
    public String laneOwners() {
        return """
                SELECT (l.objid::bigint & 65535)::int, a.application_name, a.backend_start, a.state_change \
                FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid WHERE l.locktype = 'advisory' \
                AND l.granted AND l.objsubid = 1 AND l.classid::bigint = ? AND (l.objid::bigint >> 16) = ? \
                ORDER BY 1""";
    }

    /** The outbox table's lock key half and the lane kind, for {@link #laneOwners()}. */
    public Object[] laneOwnerBinds() {
        return new Object[] {tableHash, (long) AdvisoryLocks.KIND_LANE};
    }

    /** Pending events per shard. */
    public String pendingByShard() {
        return "SELECT shard, count(*) FROM " + table + " WHERE " + pending.apply(null) + " GROUP BY shard";
    }

    /** All pending events. */
    public String pendingCount() {
        return "SELECT count(*) FROM " + table + " WHERE " + pending.apply(null);
    }

    /** Parked keys, each with its head event and the events waiting behind it (bind: limit). */
    public String parkedKeys() {
        return """
                SELECT p.partition_key, p.event_id, p.id, p.topic, p.event_type, p.attempts, p.last_error, \
                p.created_at, (SELECT count(*) FROM %1$s w WHERE %2$s \
                AND w.partition_key = p.partition_key AND w.id > p.id) FROM %1$s p \
                WHERE p.state = %3$s ORDER BY p.id LIMIT ?""".formatted(table, pending.apply("w"),
                EventState.PARKED.sql());
    }

    /** Dead events in id order (bind: limit). */
    public String deadEvents() {
        return "SELECT event_id, id, partition_key, topic, event_type, attempts, last_error, created_at FROM "
                + table + " WHERE state = " + EventState.DEAD.sql() + " ORDER BY id LIMIT ?";
    }

    /** One event, its payload only when asked (binds: with payload, event id). */
    public String event() {
        return """
                SELECT id, event_id, state, topic, partition_key, shard, aggregate_type, aggregate_id, \
                aggregate_version, event_type, headers::text, created_at, attempts, next_attempt_at, last_error, \
                failed_at, published_at, operator_action, operator_name, operator_at, \
                CASE WHEN ? THEN coalesce(convert_to(payload::text, 'UTF8'), payload_bytes) END \
                FROM %s WHERE event_id = ?""".formatted(table);
    }

    /** Changes one event that is in one of the given states (binds: operator, event id, states). */
    public String changeOne(Change change) {
        return "UPDATE " + table + " SET " + set(change) + " WHERE event_id = ? AND state = ANY(?)";
    }

    /** Changes the given events that are still in one of the given states (binds: operator, event ids, states). */
    public String changeMatching(Change change) {
        return "UPDATE " + table + " SET " + set(change) + " WHERE event_id = ANY(?) AND state = ANY(?)";
    }

    /** Makes the next pending event of each released parked key due (bind: the event ids, a uuid array). */
    public String releaseNext() {
        return releaseNext;
    }

    private String set(Change change) {
        return switch (change) {
            case REQUEUE -> requeueSet;
            case DISCARD -> discardSet;
            case SKIP -> skipSet;
        };
    }

    /**
     * A filter's query: its criteria as fixed SQL fragments with bind parameters, in id order. Binds: the states (a
     * text array), the id to start after, then {@code criteria}, then the limit.
     */
    public record Matching(String sql, List<Object> criteria) {
    }

    /** The {@code columns} of the rows that match {@code f}. */
    public Matching matching(String columns, EventFilter f) {
        StringBuilder sql = new StringBuilder("SELECT ").append(columns).append(" FROM ").append(table)
                .append(" WHERE state = ANY(?) AND id > ?");
        List<Object> criteria = new ArrayList<>();
        criterion(sql, criteria, " AND topic = ?", f.topic());
        criterion(sql, criteria, " AND event_type = ?", f.eventType());
        criterion(sql, criteria, " AND partition_key = ?", f.key());
        criterion(sql, criteria, " AND created_at >= ?", timestamp(f.createdFrom()));
        criterion(sql, criteria, " AND created_at < ?", timestamp(f.createdBefore()));
        criterion(sql, criteria, " AND failed_at >= ?", timestamp(f.failedFrom()));
        criterion(sql, criteria, " AND failed_at < ?", timestamp(f.failedBefore()));
        sql.append(" ORDER BY id LIMIT ?");
        return new Matching(sql.toString(), criteria);
    }

    private static void criterion(StringBuilder sql, List<Object> criteria, String fragment, Object value) {
        if (value != null) {
            sql.append(fragment);
            criteria.add(value);
        }
    }

    private static OffsetDateTime timestamp(Instant i) {
        return i == null ? null : i.atOffset(ZoneOffset.UTC);
    }
}
