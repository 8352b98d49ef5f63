package io.txoutbox.internal.inbox;

import io.txoutbox.internal.Identifiers;
import java.nio.charset.StandardCharsets;
import java.util.zip.CRC32;

/** The inbox's SQL for PostgreSQL, in one place. The schema name is validated and quoted; values are parameters. */
final class InboxSql {

    /** Advisory lock kinds (low half of the key); distinct from the relay's, which hash another name anyway. */
    static final int LOCK_KIND_LANE = 3;
    static final int LOCK_KIND_LANE_COUNT = 4;
    static final int INSERT_COLUMNS = 14;
    /** A received row: the key as its text form (partition_key) and its bytes, the headers as text and bytes. */
    private static final String INSERT_COLUMN_LIST = "consumer, event_id, source_topic, source_partition,"
            + " source_offset, partition_key, key_bytes, event_type, aggregate_type, aggregate_id, aggregate_version,"
            + " payload, headers, header_bytes";
    private static final String INSERT_VALUES = "(?,?,?,?,?,?,?,?,?,?,?,?,?::jsonb,?)";

    final String schemaName;
    final String inbox;
    final String processed;
    final String versions;

    final String insertProcessed;
    final String applyVersion;
    final String waitingKeys;
    final String claim;
    final String markProcessed;
    final String recordFailures;
    final String insertDead;
    final String insertDeadBare;

    InboxSql(String schema) {
        this.schemaName = schema;
        String s = Identifiers.quote(schema);
        this.inbox = s + ".inbox_event";
        this.processed = s + ".processed_event";
        this.versions = s + ".applied_version";
        this.insertProcessed = "INSERT INTO " + processed + " (consumer, event_id) VALUES (?, ?) ON CONFLICT DO NOTHING";
        this.applyVersion = "INSERT INTO " + versions + " AS v (consumer, aggregate_type, aggregate_id, version)"
                + " VALUES (?, ?, ?, ?) ON CONFLICT (consumer, aggregate_type, aggregate_id)"
                + " DO UPDATE SET version = EXCLUDED.version, applied_at = now() WHERE v.version < EXCLUDED.version";
        // Both predicates repeat the partial indexes' so the planner can use them (see the relay's RelaySql).
        this.waitingKeys = "SELECT partition_key, min(id) FROM " + inbox
                + " WHERE consumer = ? AND shard = ANY(?) AND partition_key IS NOT NULL"
                + " AND (state = 'PARKED' OR (state = 'PENDING' AND next_attempt_at IS NOT NULL))"
                + " AND (state = 'PARKED' OR next_attempt_at > now()) GROUP BY partition_key";
        this.claim = "SELECT id, event_id, partition_key, event_type, aggregate_type, aggregate_id, aggregate_version,"
                + " payload, ARRAY(SELECT key FROM jsonb_each_text(headers) ORDER BY key),"
                + " ARRAY(SELECT value FROM jsonb_each_text(headers) ORDER BY key),"
                + " source_topic, source_partition, source_offset, received_at, attempts,"
                // the event's age at the claim (µs, database clock): the start of its receive→processed latency
                + " greatest(0, (extract(epoch FROM clock_timestamp() - received_at) * 1000000)::bigint),"
                + " key_bytes, header_bytes"
                + " FROM " + inbox
                + " WHERE consumer = ? AND state = 'PENDING' AND shard = ANY(?)"
                + " AND (next_attempt_at IS NULL OR next_attempt_at <= now())"
                + " AND NOT EXISTS (SELECT 1 FROM unnest(?::text[], ?::bigint[]) AS w(k, from_id)"
                + " WHERE w.k = partition_key AND id >= w.from_id)"
                + " ORDER BY id LIMIT ?";
        this.markProcessed = "UPDATE " + inbox + " SET state = 'PROCESSED', processed_at = now(),"
                + " next_attempt_at = NULL WHERE consumer = ? AND state = 'PENDING' AND id = ANY(?)";
        this.recordFailures = "UPDATE " + inbox + " o SET attempts = o.attempts + 1, last_error = f.err,"
                + " state = f.new_state,"
                + " next_attempt_at = CASE WHEN f.new_state = 'PENDING' THEN now() + f.delay_ms * interval '1 ms' END"
                + " FROM unnest(?::bigint[], ?::text[], ?::bigint[], ?::text[]) AS f(id, err, delay_ms, new_state)"
                + " WHERE o.consumer = ? AND o.state = 'PENDING' AND o.id = f.id";
        // A received record that cannot be stored as it is: kept DEAD (never processed; its key moves on) with why.
        this.insertDead = "INSERT INTO " + inbox + " (" + INSERT_COLUMN_LIST + ", state, last_error) VALUES "
                + INSERT_VALUES.substring(0, INSERT_VALUES.length() - 1) + ", 'DEAD', ?) ON CONFLICT DO NOTHING";
        // ... and when even that row is refused (a constraint on the payload, say): where it came from and why.
        this.insertDeadBare = "INSERT INTO " + inbox + " (consumer, event_id, source_topic, source_partition,"
                + " source_offset, state, last_error) VALUES (?, ?, ?, ?, ?, 'DEAD', ?) ON CONFLICT DO NOTHING";
    }

    /** A multi-row insert of {@code rows} messages; duplicates (also within the statement) are dropped. */
    String insertInbox(int rows) {
        StringBuilder b = new StringBuilder(200 + rows * 40);
        b.append("INSERT INTO ").append(inbox).append(" (").append(INSERT_COLUMN_LIST).append(") VALUES ");
        for (int i = 0; i < rows; i++) {
            b.append(i == 0 ? "" : ",").append(INSERT_VALUES);
        }
        return b.append(" ON CONFLICT DO NOTHING").toString();
    }

    /** The 64-bit advisory lock key: the consumer's inbox in the high half, kind and value in the low half. */
    static long lockKey(int consumerHash, int kind, int value) {
        return ((long) consumerHash << 32) | ((long) kind << 16) | (value & 0xFFFF);
    }

    int consumerHash(String consumer) {
        CRC32 crc = new CRC32();
        crc.update((schemaName + ".inbox_event." + consumer).getBytes(StandardCharsets.UTF_8));
        return (int) crc.getValue();
    }

    /** Lane counts other worker sessions of this consumer work with (their shared "lane count" locks). */
    static String otherLaneCounts(int consumerHash) {
        return "SELECT DISTINCT (objid::bigint & 65535)::int FROM pg_locks WHERE locktype = 'advisory'"
                + " AND objsubid = 1 AND granted AND classid::bigint = " + Integer.toUnsignedLong(consumerHash)
                + " AND (objid::bigint >> 16) = " + LOCK_KIND_LANE_COUNT + " AND pid <> pg_backend_pid()";
    }
}
