package io.txoutbox.internal.relay;

import io.txoutbox.OutboxReplay;
import io.txoutbox.ReplayConfig;
import io.txoutbox.internal.pg.Jdbc;
import io.txoutbox.internal.pg.ReplayStatements;
import io.txoutbox.internal.progress.OutboxRows;
import io.txoutbox.spi.OutboxRecord;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * What a replay reads of the outbox: the rows of one id window that match its filter, whatever their state, as the
 * records it sends (redirected, with the replay header); and one row's current state while it waits for it.
 */
final class ReplayPages {

    /**
     * A row of a page: the record to send (redirected, with the replay header), its own topic, its state when read
     * and whether it was published then (the progress model's predicate).
     */
    record Row(OutboxRecord record, String topic, String state, boolean published) {
    }

    private final ReplayStatements sql;
    private final ReplayConfig b;

    ReplayPages(ReplayStatements sql, ReplayConfig b) {
        this.sql = sql;
        this.b = b;
    }

    /** The matching rows with ids in {@code (lo, hi]}, in id order, at most a batch of them. */
    List<Row> page(Connection c, long lo, long hi) throws SQLException {
        List<Row> out = new ArrayList<>();
        try (PreparedStatement ps = c.prepareStatement(sql.page())) {
            int i = 1;
            ps.setLong(i++, lo);
            ps.setLong(i++, hi);
            for (String v : new String[] {b.topic(), b.aggregateType(), b.aggregateId(), b.eventType()}) {
                ps.setString(i++, v);
                ps.setString(i++, v);
            }
            Timestamp from = b.createdFrom() == null ? null : Timestamp.from(b.createdFrom());
            Timestamp to = b.createdTo() == null ? null : Timestamp.from(b.createdTo());
            ps.setTimestamp(i++, from);
            ps.setTimestamp(i++, from);
            ps.setTimestamp(i++, to);
            ps.setTimestamp(i++, to);
            ps.setInt(i, b.batchSize());
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    OutboxRecord r = OutboxRows.record(rs);
                    Map<String, String> headers = new HashMap<>(r.headers());
                    headers.put(OutboxReplay.REPLAY_HEADER, b.name());
                    out.add(new Row(r.redirect(b.toTopic() != null ? b.toTopic() : r.topic(), headers), r.topic(),
                            rs.getString(14), rs.getBoolean(15)));
                }
            }
        }
        return out;
    }

    /** The row's state now; {@code null} when it is gone. */
    String currentState(Connection c, Row row) throws SQLException {
        return Jdbc.queryString(c, sql.state(), row.record().eventId());
    }

    /** Each row's own topic by outbox id. */
    static Map<Long, String> originalTopics(List<Row> rows) {
        Map<Long, String> topics = new HashMap<>();
        for (Row row : rows) {
            topics.put(row.record().id(), row.topic());
        }
        return topics;
    }
}
