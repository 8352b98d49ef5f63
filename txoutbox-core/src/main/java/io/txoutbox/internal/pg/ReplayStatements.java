package io.txoutbox.internal.pg;

import io.txoutbox.OutboxSchema;

/**
 * The statements of {@code OutboxReplay}: the page walk over the outbox by id windows, one row's state, and the
 * checkpoint rows of {@code <outbox_table>_replay} (schema V4).
 */
public final class ReplayStatements {

    private final String checkpointTable;
    private final String page;
    private final String state;

    /**
     * {@code recordColumns}: the columns of an outbox record, first in the page's SELECT (13 of them); {@code
     * published}: the progress model's predicate of a published row.
     */
    public ReplayStatements(OutboxSchema schema, String recordColumns, String published) {
        String t = schema.qualifiedOutboxTable();
        this.checkpointTable = Identifiers.quote(schema.schema()) + "."
                + Identifiers.quote(schema.outboxTable() + "_replay");
        // one row's state, read while the replay waits for it
        this.state = "SELECT state FROM " + t + " WHERE event_id = ?";
        // every state: a row that is not published must be seen to be waited for or reported, never passed silently
        // (binds: the window's ids, each filter value twice, the page size); after the state, whether it is published
        this.page = """
                SELECT %s, state, %s FROM %s \
                WHERE id > ? AND id <= ? \
                AND (?::text IS NULL OR topic = ?::text) \
                AND (?::text IS NULL OR aggregate_type = ?::text) \
                AND (?::text IS NULL OR aggregate_id = ?::text) \
                AND (?::text IS NULL OR event_type = ?::text) \
                AND (?::timestamptz IS NULL OR created_at >= ?::timestamptz) \
                AND (?::timestamptz IS NULL OR created_at < ?::timestamptz) \
                ORDER BY id LIMIT ?""".formatted(recordColumns, published, t);
    }

    /** The quoted, qualified checkpoint table; with the replay's name, its advisory lock key. */
    public String checkpointTable() {
        return checkpointTable;
    }

    /** One window's rows in id order, the state after the record's columns. */
    public String page() {
        return page;
    }

    /** The current state of one event (bind: event id). */
    public String state() {
        return state;
    }

    /** Creates the checkpoint unless it exists (binds: name, filter, last id, up-to id). */
    public String insertCheckpoint() {
        return "INSERT INTO " + checkpointTable
                + " (name, filter, last_id, up_to_id) VALUES (?, ?, ?, ?) ON CONFLICT (name) DO NOTHING";
    }

    /** Reads a checkpoint (bind: name). */
    public String readCheckpoint() {
        return "SELECT filter, last_id, up_to_id, replayed, skipped, finished_at IS NOT NULL FROM " + checkpointTable
                + " WHERE name = ?";
    }

    /** Saves the progress (binds: last id, replayed, skipped, done, name). */
    public String saveCheckpoint() {
        return "UPDATE " + checkpointTable + " SET last_id = ?, replayed = ?, skipped = ?, updated_at = now(),"
                + " finished_at = CASE WHEN ? THEN now() END WHERE name = ?";
    }

    /** Forgets a replay (bind: name). */
    public String deleteCheckpoint() {
        return "DELETE FROM " + checkpointTable + " WHERE name = ?";
    }
}
