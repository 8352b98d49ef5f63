package io.txoutbox.internal.pg;

import io.txoutbox.OutboxSchema;
import java.util.function.UnaryOperator;

/**
 * The status reads of the outbox ({@code OutboxStatus}, {@code OutboxHealth}, the gauges): backlog, shards, the
 * pending count and the relays' lane owners. Pending rows are found
 * through the pending partial index, parked and dead rows through the "failed" partial index (schema V3); each
 * predicate repeats its index's with the states as literals. What a pending row is comes from the table's progress
 * model ({@code io.txoutbox.internal.progress.ProgressModel#pending}).
 */
public final class StatusStatements {

    private final String pendingByTopic;
    private final String failedCounts;
    private final String pendingByShard;
    private final String pendingCount;
    private final long tableHash;

    /** {@code pending}: the progress model's predicate of a pending row, given a table alias (null: none). */
    public StatusStatements(OutboxSchema schema, UnaryOperator<String> pending) {
        String t = schema.qualifiedOutboxTable();
        this.tableHash = Integer.toUnsignedLong(AdvisoryLocks.relayTableHash(schema));
        this.pendingCount = "SELECT count(*) FROM " + t + " WHERE " + pending.apply(null);
        // pending events and the age of the oldest, per topic
        this.pendingByTopic = """
                SELECT topic, count(*), greatest(0, (extract(epoch FROM now() - min(created_at)) * 1000000)::bigint) \
                FROM %s WHERE %s GROUP BY topic ORDER BY topic""".formatted(t, pending.apply(null));
        // the database's time, parked keys and dead events
        this.failedCounts = """
                SELECT now(), count(*) FILTER (WHERE state = %2$s), count(*) FILTER (WHERE state = %3$s) \
                FROM %1$s WHERE state IN (%2$s, %3$s)""".formatted(t, EventState.PARKED.sql(), EventState.DEAD.sql());
        // Count and head (lowest id) per shard from the pending index alone (id and shard are in it), then one index
        // lookup per shard for the head's created_at: no heap read per pending row, unlike min(created_at).
        this.pendingByShard = """
                SELECT s.shard, s.pending, greatest(0, (extract(epoch FROM now() - h.created_at) * 1000000)::bigint) \
                FROM (SELECT shard, count(*) AS pending, min(id) AS head FROM %1$s \
                WHERE %2$s GROUP BY shard) s \
                LEFT JOIN LATERAL (SELECT created_at FROM %1$s h WHERE %3$s AND h.id = s.head \
                LIMIT 1) h ON true ORDER BY s.shard""".formatted(t, pending.apply(null), pending.apply("h"));
    }

    /** Pending events and the oldest one's age (microseconds) per topic. */
    public String pendingByTopic() {
        return pendingByTopic;
    }

    /** {@code now()}, the parked and the dead events. */
    public String failedCounts() {
        return failedCounts;
    }

    /** Pending events and the age (microseconds) of the lowest pending id per shard. */
    public String pendingByShard() {
        return pendingByShard;
    }

    /** All pending events. */
    public String pendingCount() {
        return pendingCount;
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

    /** The estimated rows of each partition of the table (bind: the qualified table). */
    public static String partitionEstimates() {
        return """
                SELECT p.relname, greatest(p.reltuples, 0)::bigint \
                FROM pg_inherits i JOIN pg_class p ON p.oid = i.inhrelid WHERE i.inhparent = ?::regclass""";
    }

    /** Bounds the rest of the transaction's statements (bind: the timeout in milliseconds, as text). */
    public static String statementTimeoutForTransaction() {
        return "SELECT set_config('statement_timeout', ?, true)";
    }
}
