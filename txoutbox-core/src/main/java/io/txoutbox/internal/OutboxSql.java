package io.txoutbox.internal;

import io.txoutbox.OutboxSchema;

/** The writer's SQL for PostgreSQL. Identifiers come validated from {@link OutboxSchema}; values are parameters. */
final class OutboxSql {

    static final int COLUMNS_PER_ROW = 10;
    private static final String ROW = "(?, ?, ?, ?, ?, ?, ?, CAST(? AS jsonb), ?, CAST(? AS jsonb))";

    private final String insertPrefix;
    private final String[] insertByRows;

    OutboxSql(OutboxSchema schema, int maxRows) {
        this.insertPrefix = "INSERT INTO " + schema.qualifiedOutboxTable()
                + " (event_id, topic, partition_key, aggregate_type, aggregate_id, aggregate_version, event_type,"
                + " payload, payload_bytes, headers) VALUES ";
        this.insertByRows = new String[maxRows + 1];
    }

    /** {@code INSERT … VALUES (…), (…)} for {@code rows} rows; cached, so each size is built once. */
    String insert(int rows) {
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
}
