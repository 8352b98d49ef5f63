package io.txoutbox.internal.pg;


/**
 * The statements of schema V6's online step, the {@code inbox_event.key_bytes} backfill ({@code InboxKeyBackfill}).
 * The schema name is validated and quoted; values are bind parameters.
 */
public final class InboxKeyBackfillStatements {

    private final String inbox;
    private final String isDone;
    private final String recordDone;
    private final String fillPages;

    public InboxKeyBackfillStatements(String schema) {
        String s = Identifiers.quote(schema);
        this.inbox = s + ".inbox_event";
        String marker = s + ".txoutbox_backfill";

        // Whether the step is recorded as done (a row, or none); binds the step's name.
        this.isDone = "SELECT 1 FROM " + marker + " WHERE step = ?";

        // Records the step as done; binds step, rows, batches.
        this.recordDone = """
                INSERT INTO %s (step, rows_done, batches) VALUES (?, ?, ?) ON CONFLICT (step) DO NOTHING"""
                .formatted(marker);

        // One batch: the rows of the heap pages [from, to) with a key and no key_bytes; binds the two tids as text.
        this.fillPages = """
                UPDATE %s SET key_bytes = convert_to(partition_key, 'UTF8')
                 WHERE ctid >= ?::text::tid AND ctid < ?::text::tid
                 AND key_bytes IS NULL AND partition_key IS NOT NULL""".formatted(inbox);
    }

    /** The inbox table, quoted and qualified (bound as text to {@link #pages()}). */
    public String inbox() {
        return inbox;
    }

    /** Binds the step's name; a row when the step is done. */
    public String isDone() {
        return isDone;
    }

    /** Binds step, rows, batches. */
    public String recordDone() {
        return recordDone;
    }

    /** The heap pages of a table; binds the table (regclass text). */
    public String pages() {
        return "SELECT pg_relation_size(?::regclass) / current_setting('block_size')::bigint";
    }

    /** A batch's lock timeout: a worker or receiver holds its rows only for a short transaction. */
    public String batchLockTimeout() {
        return "SET LOCAL lock_timeout = '2s'";
    }

    /** A batch's statement timeout. */
    public String batchStatementTimeout() {
        return "SET LOCAL statement_timeout = '60s'";
    }

    /** Binds the first page's tid and the end page's tid, as text ({@code "(page,0)"}). */
    public String fillPages() {
        return fillPages;
    }
}
