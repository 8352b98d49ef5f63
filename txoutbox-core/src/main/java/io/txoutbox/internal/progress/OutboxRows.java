package io.txoutbox.internal.progress;

import io.txoutbox.internal.pg.RelayStatements;
import io.txoutbox.spi.OutboxRecord;
import java.nio.charset.StandardCharsets;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.UUID;

/** An outbox row as the relay hands it to the transport, read from a SELECT of the relay's record columns. */
public final class OutboxRows {

    private OutboxRows() {
    }

    /** The record of the current row of a SELECT that starts with {@link RelayStatements#RECORD_COLUMNS}. */
    public static OutboxRecord record(ResultSet rs) throws SQLException {
        String json = rs.getString(9);
        byte[] bytes = rs.getBytes(10);
        long version = rs.getLong(7);
        Long aggregateVersion = rs.wasNull() ? null : version;
        byte[] value = json != null ? json.getBytes(StandardCharsets.UTF_8) : bytes;
        return new OutboxRecord(rs.getLong(1), (UUID) rs.getObject(2), rs.getString(3), rs.getString(4),
                rs.getString(5), rs.getString(6), aggregateVersion, rs.getString(8), value, json != null,
                HeadersJson.parse(rs.getString(11)), rs.getTimestamp(12).toInstant(), rs.getInt(13));
    }
}
