package io.txoutbox.internal.relay;

import io.txoutbox.OutboxSchema;
import io.txoutbox.spi.OutboxRecord;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.UUID;
import java.nio.charset.StandardCharsets;
import java.util.zip.CRC32;

/** The polling relay's SQL for PostgreSQL, in one place. Identifiers are validated; values are parameters. */
final class RelaySql {

    /** Advisory lock kinds in the low 32 bits of the 64-bit lock key ({@code kind << 16 | value}). */
    static final int LOCK_KIND_LANE = 1;
    static final int LOCK_KIND_LANE_COUNT = 2;
    /** Held shared by every running relay instance of the table: the members that share the lanes. */
    static final int LOCK_KIND_MEMBER = 3;

    /**
     * Where an event's commit→ack latency starts, as an age at the claim in microseconds. The commit timestamp of
     * the row's version is its writer's commit only while no relay has updated the row: a row that failed before
     * (it has a {@code last_error}) counts from {@code created_at}. A row whose commit time is unknown (committed
     * before tracking was on, or frozen) counts from this claim. {@code clock_timestamp()} is read after the
     * statement's snapshot, so it is never before a visible commit.
     */
    static final String COMMIT_AGE_TRACKED = "greatest(0, (extract(epoch FROM clock_timestamp() - coalesce("
            + "CASE WHEN last_error IS NULL THEN pg_xact_commit_timestamp(xmin) ELSE created_at END,"
            + " clock_timestamp())) * 1000000)::bigint)";
    /** Without commit timestamps: from this claim, or from {@code created_at} for a row that failed before. */
    static final String COMMIT_AGE_UNTRACKED = "CASE WHEN last_error IS NULL THEN 0::bigint ELSE greatest(0,"
            + " (extract(epoch FROM clock_timestamp() - created_at) * 1000000)::bigint) END";

    /**
     * Before each claim: the lowest id of a backing-off row of the lane (PENDING with a {@code next_attempt_at}, keyed
     * or not; null: none), which the claim floor stays at or below. It reads the small {@code <t>_backoff} index
     * (schema V9), whatever the number of parked keys.
     */
    final String waiting;
    final String claim;
    /** The claim for a server with {@code track_commit_timestamp = on}. */
    final String claimWithCommitTime;
    final String markPublished;
    /**
     * A partitioned table: the mark transaction plans generically. The lanes plan every statement for its parameters
     * (custom plans), and for an {@code id = ANY(2,000 ids)} over 22 partitions that planning alone took 6–23 ms, the
     * execution 25–31 ms; with the cached generic plan 0.1 ms and 12.5 ms (EXPLAIN ANALYZE, PostgreSQL 15).
     */
    static final String GENERIC_PLANS = "SET LOCAL plan_cache_mode = force_generic_plan";
    final boolean partitioned;
    final String recordFailures;
    final int tableHash;

    /** The columns {@link #record(ResultSet)} reads, first in a SELECT, in this order. */
    static final String RECORD_COLUMNS = "id, event_id, topic, partition_key, aggregate_type, aggregate_id,"
            + " aggregate_version, event_type, payload::text, payload_bytes, headers::text, created_at, attempts";

    /** The record of the current row of a SELECT that starts with {@link #RECORD_COLUMNS}. */
    static OutboxRecord record(ResultSet rs) throws SQLException {
        String json = rs.getString(9);
        byte[] bytes = rs.getBytes(10);
        long version = rs.getLong(7);
        Long aggregateVersion = rs.wasNull() ? null : version;
        byte[] value = json != null ? json.getBytes(StandardCharsets.UTF_8) : bytes;
        return new OutboxRecord(rs.getLong(1), (UUID) rs.getObject(2), rs.getString(3), rs.getString(4),
                rs.getString(5), rs.getString(6), aggregateVersion, rs.getString(8), value, json != null,
                HeadersJson.parse(rs.getString(11)), rs.getTimestamp(12).toInstant(), rs.getInt(13));
    }

    RelaySql(OutboxSchema schema) {
        String t = schema.qualifiedOutboxTable();
        // The predicate repeats the "backoff" partial index's, so the planner can use it. A parked row is not in it: a
        // parked key does not hold the floor back (its held events may fall below the floor; OutboxAdmin marks the
        // row a release makes due, see the claim). Unkeyed rows that wait hold nothing back.
        this.waiting = "SELECT min(id) FROM " + t + " WHERE shard = ANY(?)"
                + " AND state = 'PENDING' AND next_attempt_at IS NOT NULL";
        this.claim = claim(t, COMMIT_AGE_UNTRACKED);
        this.claimWithCommitTime = claim(t, COMMIT_AGE_TRACKED);
        this.markPublished = "UPDATE " + t + " SET state = 'PUBLISHED', published_at = now()"
                + " WHERE state = 'PENDING' AND id = ANY(?)";
        this.partitioned = schema.isPartitioned();
        this.recordFailures = "UPDATE " + t + " o SET attempts = o.attempts + f.add_attempt, last_error = f.err,"
                + " state = f.new_state,"
                + " failed_at = CASE WHEN f.new_state IN ('PARKED', 'DEAD') THEN now() ELSE o.failed_at END,"
                + " next_attempt_at = CASE WHEN f.new_state = 'PENDING' THEN now() + f.delay_ms * interval '1 ms' END"
                + " FROM unnest(?::bigint[], ?::text[], ?::bigint[], ?::text[], ?::int[])"
                + " AS f(id, err, delay_ms, new_state, add_attempt)"
                + " WHERE o.state = 'PENDING' AND o.id = f.id";
        CRC32 crc = new CRC32();
        crc.update((schema.schema() + "." + schema.outboxTable()).getBytes(StandardCharsets.UTF_8));
        this.tableHash = (int) crc.getValue();
    }

    /**
     * The claim; its 14th column is how long ago, in microseconds and by the database's clock, the event's
     * commit→ack latency starts ({@code ageSql}). Parameters: the floor, the lane's shards (twice), the limit.
     *
     * <p>It starts at the floor, or lower at the lowest backing-off row of the lane, read by this statement (so in
     * its snapshot; {@code least} ignores the null of none). So a row an operator released after the floor went past
     * it is claimed before any later event of its key, which a floor read before the release would not do:
     * {@code OutboxAdmin.requeue} makes the row due with a {@code next_attempt_at}, and {@code skip} and
     * {@code discard} of a parked row so mark the key's next pending row.
     *
     * <p>A key waits from its failed event on; its events before that one still go out. The later events of a key
     * that waits are held back by one probe of the waiting index per candidate row (its shard and key, a waiting row
     * with a lower id), so the cost grows with the batch, not with the number of waiting keys, and no key is ever
     * beyond a limit. {@code OFFSET 0} keeps the probe a subplan per row: as an anti-join the planner may read the
     * whole waiting index for every claim (with statistics taken before a mass park: 200,000 parked heads, a
     * materialized scan of them per candidate, 13.6 s for 100 rows on PostgreSQL 15). The probe runs also while
     * nothing waits (two buffer hits on the empty index: 1.7 ms instead of 0.6 ms for a claim of 2,000 rows): a
     * separate "does anything wait" read was planned by PostgreSQL 18 as a bitmap scan of every parked row.
     */
    private static String claim(String t, String ageSql) {
        return "SELECT " + RECORD_COLUMNS + ", " + ageSql
                + " FROM " + t + " o"
                + " WHERE state = 'PENDING' AND id >= least(?, (SELECT min(b.id) FROM " + t + " b"
                + " WHERE b.shard = ANY(?) AND b.state = 'PENDING' AND b.next_attempt_at IS NOT NULL))"
                + " AND shard = ANY(?)"
                + " AND (next_attempt_at IS NULL OR next_attempt_at <= now())"
                + " AND NOT EXISTS (SELECT 1 FROM " + t + " w"
                + " WHERE w.shard = o.shard AND w.partition_key = o.partition_key AND w.id < o.id"
                + " AND (w.state = 'PARKED' OR (w.state = 'PENDING' AND w.next_attempt_at IS NOT NULL))"
                + " AND (w.state = 'PARKED' OR w.next_attempt_at > now()) OFFSET 0)"
                + " ORDER BY id LIMIT ?";
    }

    /** The 64-bit advisory lock key: the table in the high half, kind and value in the low half. */
    long lockKey(int kind, int value) {
        return ((long) tableHash << 32) | ((long) kind << 16) | (value & 0xFFFF);
    }

    /**
     * The member lock of a live relay instance: its lane count and its cap of lanes are in the key, so that members
     * can share the lanes by everybody's caps, and an instance with another lane count (which works nothing) takes
     * no share. Low half: {@code 3 << 28 | lanes << 14 | cap}.
     */
    long memberKey(int lanes, int cap) {
        return ((long) tableHash << 32) | ((long) LOCK_KIND_MEMBER << 28) | ((long) lanes << 14) | cap;
    }

    /** Caps of the live members with this lane count, one row per member. */
    String memberCaps(int lanes) {
        return "SELECT (objid::bigint & 16383)::int FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 1"
                + " AND granted AND classid::bigint = " + Integer.toUnsignedLong(tableHash)
                + " AND (objid::bigint >> 28) = " + LOCK_KIND_MEMBER
                + " AND ((objid::bigint >> 14) & 16383) = " + lanes;
    }

    /** Lane counts other relay sessions work this table with (their shared "lane count" locks). */
    String otherLaneCounts() {
        return "SELECT DISTINCT (objid::bigint & 65535)::int FROM pg_locks WHERE locktype = 'advisory'"
                + " AND objsubid = 1 AND granted AND classid::bigint = " + Integer.toUnsignedLong(tableHash)
                + " AND (objid::bigint >> 16) = " + LOCK_KIND_LANE_COUNT + " AND pid <> pg_backend_pid()";
    }
}
