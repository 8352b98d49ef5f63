package io.txoutbox.internal.progress;

import static io.txoutbox.internal.pg.EventState.HELD;
import static io.txoutbox.internal.pg.EventState.PARKED;
import static io.txoutbox.internal.pg.EventState.PENDING;
import static io.txoutbox.internal.pg.EventState.PUBLISHED;

import io.txoutbox.OutboxSchema;
import io.txoutbox.internal.pg.EventState;
import io.txoutbox.internal.pg.Identifiers;
import io.txoutbox.internal.pg.RelayStatements;

/**
 * The SQL of the cursor progress model ({@link CursorProgress}): the lanes' progress rows in
 * {@code <outbox>_progress} (schema version 11), the claim above a lane's high-water mark, the gap check behind its
 * cursor, holding and releasing the rows behind a waiting key, and the readers' predicates. States are quoted
 * literals, as the partial indexes need.
 */
final class CursorStatements {

    /** The progress table's alias inside the readers' predicates: unusual, so it never hides a caller's alias. */
    private static final String P = "txoutbox_p";

    private final String table;
    private final String progress;
    private final int shards;

    CursorStatements(OutboxSchema schema) {
        this.table = schema.qualifiedOutboxTable();
        this.progress = Identifiers.quote(schema.schema()) + "." + Identifiers.quote(schema.outboxTable()
                + "_progress");
        this.shards = schema.shards();
    }

    /** The progress table, quoted and qualified. */
    String progressTable() {
        return progress;
    }

    /** The cursor of the shard in {@code shardColumn}: the highest through_id of the rows covering it, or 0. */
    String cursorOf(String shardColumn) {
        return "(SELECT coalesce(max(" + P + ".through_id), 0) FROM " + progress + " " + P + " WHERE " + shardColumn
                + " = ANY(" + P + ".shards))";
    }

    /** The lowest cursor over every shard of the table (0 while a shard has none): where pending rows start. */
    private String lowestCursor() {
        return "(SELECT min(c) FROM (SELECT coalesce(max(" + P + ".through_id), 0) AS c FROM generate_series(0, "
                + (shards - 1) + ") s LEFT JOIN " + progress + " " + P + " ON s = ANY(" + P + ".shards) GROUP BY s) x)";
    }

    /**
     * A pending row: held, backing off or due, or fresh above its shard's cursor. Three arms, each one an index's:
     * {@code _held}, {@code _backoff}, and {@code _pending} from the lowest cursor on.
     */
    String pending(String a) {
        return "(" + a + "state = " + HELD.sql() + " OR (" + a + "state = " + PENDING.sql() + " AND " + a
                + "next_attempt_at IS NOT NULL) OR (" + a + "state = " + PENDING.sql() + " AND " + a
                + "next_attempt_at IS NULL AND " + a + "id > " + lowestCursor() + " AND " + a + "id > "
                + cursorOf(a + "shard") + "))";
    }

    /** A published row: PUBLISHED (it failed before), or fresh at or below its shard's cursor. */
    String published(String a) {
        return "(" + a + "state = " + PUBLISHED.sql() + " OR (" + a + "state = " + PENDING.sql() + " AND " + a
                + "next_attempt_at IS NULL AND " + a + "id <= " + cursorOf(a + "shard") + "))";
    }

    /**
     * When a row was published: {@code published_at} where the relay wrote it (a row that failed before); else the
     * cursor passed the row after its creation, and {@code created_at} stands in (see docs/progress-models.md).
     */
    String publishedAt(String a) {
        return "coalesce(" + a + "published_at, " + a + "created_at)";
    }

    /**
     * The lane's starting point: the lowest and the highest cursor of its shards. Binds: the shards (int array).
     */
    String laneCursors() {
        return "SELECT coalesce(min(c), 0), coalesce(max(c), 0) FROM (SELECT " + cursorOf("s") + " AS c FROM unnest(?::int[]) s) x";
    }

    /** Creates the lane's progress row if missing. Binds: lane, shards (int array), through_id. */
    String insertLane() {
        return "INSERT INTO " + progress + " (lane, shards, through_id) VALUES (?, ?::smallint[], ?) "
                + "ON CONFLICT (lane) DO NOTHING";
    }

    /** Moves the lane's cursor forward (never back). Binds: through_id, lane, through_id. */
    String advance() {
        return "UPDATE " + progress + " SET through_id = ?, moved_at = now() WHERE lane = ? AND through_id < ?";
    }

    /**
     * The ids of the lane's rows in (from, to] that still look fresh (PENDING, no next_attempt_at), in id order.
     * Binds: shards, from, to.
     */
    String freshIds(boolean perShard) {
        return "SELECT id FROM " + table + " o WHERE state = " + PENDING.sql() + " AND next_attempt_at IS NULL "
                + "AND shard = ANY(?) AND id > ? AND id <= ?" + (perShard ? " AND id > " + cursorOf("o.shard") : "")
                + " ORDER BY id";
    }

    /**
     * Whether a later event of the row {@code o}'s key must wait: a parked or backing-off row of the key before it (the
     * waiting index), or a held one (the held index).
     */
    private String waits(String o) {
        return "EXISTS (SELECT 1 FROM %1$s w WHERE w.shard = %2$s.shard AND w.partition_key = %2$s.partition_key "
                .formatted(table, o)
                + "AND w.id < %s.id AND (w.state = %s OR (w.state = %s AND w.next_attempt_at IS NOT NULL)) "
                .formatted(o, PARKED.sql(), PENDING.sql())
                + "AND (w.state = %s OR w.next_attempt_at > now()) OFFSET 0) ".formatted(PARKED.sql())
                + "OR EXISTS (SELECT 1 FROM %1$s h WHERE h.shard = %2$s.shard AND h.partition_key = %2$s.partition_key "
                .formatted(table, o)
                + "AND h.state = %s AND h.id < %s.id OFFSET 0)".formatted(HELD.sql(), o);
    }

    /**
     * The claim: the lane's rows that look fresh above its cursor, each flagged {@code held} when its key waits; and
     * its due retries, which go out only when their key does not wait. In id order, at most the limit. The fresh rows
     * at or below the lane's high-water mark come as their id alone (every other column NULL): each is one the lane
     * delivered, unless it is a late committer, which the lane reads again whole ({@link #lateRows}). So the re-read
     * of the settlement window costs index and heap visits, not the columns' output and transfer. Columns: the record
     * columns, the commit age (see {@link RowStateStatements}), held, retry. Binds: shards, cursor, high-water mark
     * (the window); shards, high-water mark, limit (the rows above it); shards, limit (due retries); limit.
     */
    String claim(boolean perShard, String ageSql) {
        return claims.computeIfAbsent(perShard + ageSql, k -> buildClaim(perShard, ageSql));
    }

    private final java.util.Map<String, String> claims = new java.util.concurrent.ConcurrentHashMap<>();

    private String buildClaim(boolean perShard, String ageSql) {
        String fresh = "state = " + PENDING.sql() + " AND next_attempt_at IS NULL AND shard = ANY(?)";
        String ownCursor = perShard ? " AND id > " + cursorOf("o.shard") : "";
        String window = "SELECT id, NULL::uuid AS event_id, NULL::text AS topic, NULL::text AS partition_key, "
                + "NULL::text AS aggregate_type, NULL::text AS aggregate_id, NULL::bigint AS aggregate_version, "
                + "NULL::text AS event_type, NULL::text AS payload, NULL::bytea AS payload_bytes, NULL::text AS headers, "
                + "NULL::timestamptz AS created_at, NULL::integer AS attempts, NULL::bigint AS age, false AS held, "
                + "false AS retry FROM " + table + " o WHERE " + fresh + " AND id > ? AND id <= ?" + ownCursor;
        String above = "SELECT " + RelayStatements.RECORD_COLUMNS + ", " + ageSql + " AS age, (" + waits("o")
                + ") AS held, false AS retry FROM " + table + " o WHERE " + fresh + " AND id > ?" + ownCursor
                + " ORDER BY id LIMIT ?";
        String due = "SELECT " + RelayStatements.RECORD_COLUMNS + ", " + ageSql + " AS age, false AS held, "
                + "true AS retry FROM " + table + " o "
                + "WHERE state = " + PENDING.sql() + " AND next_attempt_at IS NOT NULL AND next_attempt_at <= now() "
                + "AND shard = ANY(?) AND NOT (" + waits("o") + ") ORDER BY id LIMIT ?";
        return "SELECT * FROM ((" + window + ") UNION ALL (" + above + ") UNION ALL (" + due + ")) c ORDER BY id "
                + "LIMIT ?";
    }

    /** Late committers the claim found below the high-water mark, whole, held flag too. Binds: ids. */
    String lateRows(String ageSql) {
        return "SELECT " + RelayStatements.RECORD_COLUMNS + ", " + ageSql + " AS age, (" + waits("o") + ") AS held, "
                + "false AS retry FROM " + table + " o WHERE state = " + PENDING.sql()
                + " AND next_attempt_at IS NULL AND id = ANY(?) ORDER BY id";
    }

    /**
     * Holds claimed or collateral rows whose key still waits: HELD. The waiting row is locked (FOR SHARE), so an
     * operator's release that changes it either ends before (then the row is not held, see {@link #due}) or waits
     * for this transaction and then finds the row held. Binds: ids. The lane's guard is appended.
     */
    String hold() {
        return "UPDATE " + table + " o SET state = " + HELD.sql() + " WHERE EXISTS (SELECT 1 FROM " + table + " w "
                + "WHERE w.shard = o.shard AND w.partition_key = o.partition_key AND w.id < o.id AND (w.state IN ("
                + PARKED.sql() + ", " + HELD.sql() + ") OR (w.state = " + PENDING.sql()
                + " AND w.next_attempt_at IS NOT NULL)) FOR SHARE OF w) AND o.state = " + PENDING.sql()
                + " AND o.next_attempt_at IS NULL AND o.id = ANY(?)";
    }

    /** Rows of a batch the cursor will pass that are neither delivered nor held: due now. Binds: ids; guard appended. */
    String due() {
        return "UPDATE " + table + " SET next_attempt_at = now() WHERE state = " + PENDING.sql()
                + " AND next_attempt_at IS NULL AND id = ANY(?)";
    }

    /** A delivered retry: PUBLISHED, as in the row-state model. Binds: ids; guard appended. */
    String publishRetries() {
        return "UPDATE " + table + " SET state = " + PUBLISHED.sql() + ", published_at = now() WHERE state = "
                + PENDING.sql() + " AND next_attempt_at IS NOT NULL AND id = ANY(?)";
    }

    /**
     * Releases the held rows of the keys of the given rows (a delivered retry, a dead-lettered head): PENDING and due
     * now. Binds: ids; guard appended.
     */
    String releaseHeldByIds() {
        return "UPDATE " + table + " n SET state = " + PENDING.sql() + ", next_attempt_at = now() FROM " + table
                + " r WHERE r.id = ANY(?) AND r.partition_key IS NOT NULL AND n.shard = r.shard "
                + "AND n.partition_key = r.partition_key AND n.id > r.id AND n.state = " + HELD.sql();
    }

    /**
     * An operator's skip or discard, after the change: the held rows of each given head's key, PENDING and due now.
     * Binds: event ids.
     */
    String releaseHeldByEventIds() {
        return "UPDATE " + table + " n SET state = " + PENDING.sql() + ", next_attempt_at = now() FROM " + table
                + " r WHERE r.event_id = ANY(?) AND r.partition_key IS NOT NULL AND r.state IN ("
                + EventState.DEAD.sql() + ", " + EventState.DISCARDED.sql() + ") AND n.shard = r.shard "
                + "AND n.partition_key = r.partition_key AND n.id > r.id AND n.state = " + HELD.sql();
    }
}
