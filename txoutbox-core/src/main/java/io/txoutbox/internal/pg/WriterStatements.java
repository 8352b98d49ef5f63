package io.txoutbox.internal.pg;

import io.txoutbox.OutboxSchema;

/**
 * The writer's statements ({@code Outbox.publish}). Identifiers come validated from {@link OutboxSchema}; every row
 * value is a bind parameter.
 */
public final class WriterStatements {

    /** Bind parameters per row of {@link #insert}. */
    public static final int COLUMNS_PER_ROW = 10;
    private static final String ROW = "(?, ?, ?, ?, ?, ?, ?, CAST(? AS jsonb), ?, CAST(? AS jsonb))";

    private final String insertPrefix;
    private final String[] insertByRows;

    public WriterStatements(OutboxSchema schema, int maxRows) {
        this.insertPrefix = "INSERT INTO " + schema.qualifiedOutboxTable()
                + " (event_id, topic, partition_key, aggregate_type, aggregate_id, aggregate_version, event_type,"
                + " payload, payload_bytes, headers) VALUES ";
        this.insertByRows = new String[maxRows + 1];
    }

    /** Writes the events: {@code INSERT … VALUES (…), (…)} for {@code rows} rows; each size is built once. */
    public String insert(int rows) {
        String sql = insertByRows[rows];
        if (sql == null) {
            StringBuilder b = new StringBuilder(insertPrefix.length() + rows * (ROW.length() + 2));
            b.append(insertPrefix);
            for (int r = 0; r < rows; r++) {
                if (r > 0) {
                    b.append(", ");
                }
                b.append(ROW);
            }
            sql = b.toString();
            insertByRows[rows] = sql;
        }
        return sql;
    }

    /** Wakes the relay at commit (the channel is the bind parameter). */
    public String notifyRelay() {
        return "SELECT pg_notify(?, '')";
    }
}
