package io.txoutbox.internal.pg;

/**
 * The retention walk's statements over one table (the outbox table, or the default partition of a partitioned one):
 * both select by {@code id} bounds, which the BRIN index on {@code id} answers with the pages of that range only.
 */
public final class RetentionStatements {

    private final String probe;
    private final String delete;

    /**
     * {@code walked}: the quoted, qualified table the walk deletes from; {@code published}, {@code publishedAt}: the
     * progress model's predicate of a published row and its publication time column.
     */
    public RetentionStatements(String walked, String published, String publishedAt) {
        // the first row of the window, and the first one created at or after the cutoff (binds: cutoff, from, to)
        this.probe = """
                SELECT min(id), min(id) FILTER (WHERE created_at >= ?) FROM %s \
                WHERE id >= ? AND id < ?""".formatted(walked);
        // the published rows of one range (binds: from, to, cutoff)
        this.delete = """
                DELETE FROM %s WHERE id >= ? AND id < ? AND %s \
                AND %s < ?""".formatted(walked, published, publishedAt);
    }

    /** Where the next range starts, and whether the walk's end is in this window. */
    public String probe() {
        return probe;
    }

    /** Deletes one range's published rows. */
    public String delete() {
        return delete;
    }

    /** Summarizes the new page ranges of the table's BRIN indexes (bind: the table as text). */
    public static String summarizeBrin() {
        return """
                SELECT i.indexrelid::regclass::text, brin_summarize_new_values(i.indexrelid) \
                FROM pg_index i JOIN pg_class ic ON ic.oid = i.indexrelid JOIN pg_am am ON am.oid = ic.relam \
                WHERE i.indrelid = ?::regclass AND am.amname = 'brin'""";
    }

    /**
     * Bounds the current transaction: lock and statement timeouts, custom plans, the application name (binds: lock
     * timeout, statement timeout, application name).
     */
    public static String limitTransaction() {
        return """
                SELECT set_config('lock_timeout', ?, true), set_config('statement_timeout', ?, true), \
                set_config('plan_cache_mode', 'force_custom_plan', true), set_config('application_name', ?, true)""";
    }
}
