package io.txoutbox.internal.progress;

import static io.txoutbox.internal.pg.EventState.DEAD;
import static io.txoutbox.internal.pg.EventState.PARKED;
import static io.txoutbox.internal.pg.EventState.PENDING;
import static io.txoutbox.internal.pg.EventState.PUBLISHED;

import io.txoutbox.OutboxSchema;
import io.txoutbox.internal.pg.RelayStatements;

/**
 * The SQL of today's progress model ({@link RowStateProgress}): a row's {@code state} says whether it was published.
 * The claim, the backoff read before it, the mark and the failure record, moved here unchanged from the relay's
 * statements. States are quoted literals ({@link io.txoutbox.internal.pg.EventState}), which the partial indexes need
 * under generic plans.
 */
public final class RowStateStatements {

    /**
     * Where an event's commit→ack latency starts, as an age at the claim in microseconds. The commit timestamp of
     * the row's version is its writer's commit only while no relay has updated the row: a row that failed before
     * (it has a {@code last_error}) counts from {@code created_at}. A row whose commit time is unknown (committed
     * before tracking was on, or frozen) counts from this claim. {@code clock_timestamp()} is read after the
     * statement's snapshot, so it is never before a visible commit.
     */
    static final String COMMIT_AGE_TRACKED = """
            greatest(0, (extract(epoch FROM clock_timestamp() - coalesce(\
            CASE WHEN last_error IS NULL THEN pg_xact_commit_timestamp(xmin) ELSE created_at END, \
            clock_timestamp())) * 1000000)::bigint)""";
    /** Without commit timestamps: from this claim, or from {@code created_at} for a row that failed before. */
    static final String COMMIT_AGE_UNTRACKED = """
            CASE WHEN last_error IS NULL THEN 0::bigint ELSE greatest(0, \
            (extract(epoch FROM clock_timestamp() - created_at) * 1000000)::bigint) END""";

    private final String waiting;
    private final String claim;
    private final String claimWithCommitTime;
    private final String markPublished;
    private final String recordFailures;
    private final String releaseNext;

    public RowStateStatements(OutboxSchema schema) {
        String t = schema.qualifiedOutboxTable();
        // The predicate repeats the "backoff" partial index's, so the planner can use it. A parked row is not in it: a
        // parked key does not hold the floor back (its held events may fall below the floor; OutboxAdmin marks the
        // row a release makes due, see the claim). Unkeyed rows that wait hold nothing back.
        this.waiting = """
                SELECT min(id) FROM %s WHERE shard = ANY(?) \
                AND state = %s AND next_attempt_at IS NOT NULL""".formatted(t, PENDING.sql());
        this.claim = claim(t, COMMIT_AGE_UNTRACKED);
        this.claimWithCommitTime = claim(t, COMMIT_AGE_TRACKED);
        this.markPublished = """
                UPDATE %s SET state = %s, published_at = now() \
                WHERE state = %s AND id = ANY(?)""".formatted(t, PUBLISHED.sql(), PENDING.sql());
        this.recordFailures = """
                UPDATE %1$s o SET attempts = o.attempts + f.add_attempt, last_error = f.err, \
                state = f.new_state, \
                failed_at = CASE WHEN f.new_state IN (%2$s, %3$s) THEN now() ELSE o.failed_at END, \
                next_attempt_at = CASE WHEN f.new_state = %4$s THEN now() + f.delay_ms * interval '1 ms' END \
                FROM unnest(?::bigint[], ?::text[], ?::bigint[], ?::text[], ?::int[]) \
                AS f(id, err, delay_ms, new_state, add_attempt) \
                WHERE o.state = %4$s AND o.id = f.id""".formatted(t, PARKED.sql(), DEAD.sql(), PENDING.sql());
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
                .formatted(t, "x.state = " + PENDING.sql(), PARKED.sql(), "n.state = " + PENDING.sql());
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
     * materialized scan of them per candidate: RELIABILITY.md, "Parked keys and the claim"). The probe runs also while
     * nothing waits (two buffer hits on the empty index; figures: BENCHMARKS.md, "Figures moved out of the code and
     * the docs"): a separate "does anything wait" read was planned by PostgreSQL 18 as a bitmap scan of every parked
     * row.
     */
    private static String claim(String t, String ageSql) {
        return """
                SELECT %2$s, %3$s \
                FROM %1$s o \
                WHERE state = %4$s AND id >= least(?, (SELECT min(b.id) FROM %1$s b \
                WHERE b.shard = ANY(?) AND b.state = %4$s AND b.next_attempt_at IS NOT NULL)) \
                AND shard = ANY(?) \
                AND (next_attempt_at IS NULL OR next_attempt_at <= now()) \
                AND NOT EXISTS (SELECT 1 FROM %1$s w \
                WHERE w.shard = o.shard AND w.partition_key = o.partition_key AND w.id < o.id \
                AND (w.state = %5$s OR (w.state = %4$s AND w.next_attempt_at IS NOT NULL)) \
                AND (w.state = %5$s OR w.next_attempt_at > now()) OFFSET 0) \
                ORDER BY id LIMIT ?""".formatted(t, RelayStatements.RECORD_COLUMNS, ageSql, PENDING.sql(),
                PARKED.sql());
    }

    /**
     * Before a claim that moves the floor: the lowest id of a backing-off row of the lane (PENDING with a
     * {@code next_attempt_at}, keyed or not; null: none), which the claim floor stays at or below. It reads the small
     * {@code <t>_backoff} index (schema V9), whatever the number of parked keys. Binds: the lane's shards.
     */
    public String waiting() {
        return waiting;
    }

    /**
     * The claim for a server without {@code track_commit_timestamp} (its shape and binds: the comment of {@code
     * claim(table, ageSql)}).
     */
    public String claim() {
        return claim;
    }

    /** The claim for a server with {@code track_commit_timestamp = on}. */
    public String claimWithCommitTime() {
        return claimWithCommitTime;
    }

    /**
     * The claim with an injected defect ({@link io.txoutbox.internal.Defects}): {@code keepParked} false forgets
     * parked keys in the exclusion, {@code keepBackoff} false lets a key's later events pass its backing-off row.
     */
    public String claimWithDefect(boolean keepParked, boolean keepBackoff) {
        String full = claim;
        String waitingRow = "(w.state = %s OR (w.state = %s AND w.next_attempt_at IS NOT NULL)) "
                .formatted(PARKED.sql(), PENDING.sql()) + "AND (w.state = %s OR w.next_attempt_at > now())"
                .formatted(PARKED.sql());
        if (!full.contains(waitingRow)) {
            throw new IllegalStateException("the claim no longer has the waiting-row predicate the defect replaces");
        }
        String replacement = keepParked ? "w.state = " + PARKED.sql()
                : keepBackoff ? "w.state = %s AND w.next_attempt_at > now()".formatted(PENDING.sql()) : "false";
        return full.replace(waitingRow, replacement);
    }

    /** Makes the next pending event of each released parked key due (bind: the event ids, a uuid array). */
    public String releaseNext() {
        return releaseNext;
    }

    /** The mark: delivered rows published, only while still PENDING. Binds: the ids. */
    public String markPublished() {
        return markPublished;
    }

    /**
     * The failure record, one entry per failed head: attempts added, error, new state, backoff. Binds: arrays of the
     * ids, errors, delays (ms), new states, attempts to add.
     */
    public String recordFailures() {
        return recordFailures;
    }
}
