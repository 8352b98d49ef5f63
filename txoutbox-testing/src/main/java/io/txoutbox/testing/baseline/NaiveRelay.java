package io.txoutbox.testing.baseline;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.util.Properties;
import java.util.UUID;
import javax.sql.DataSource;

/**
 * The seeds' relay: {@code SELECT … ORDER BY id LIMIT 100 FOR UPDATE SKIP LOCKED}, then per row a blocking
 * {@code send().get()} and an UPDATE, one commit per batch. Several of them in parallel break per-key order: one
 * locks K#5, another skips it and sends K#6 first.
 */
public final class NaiveRelay extends BaselineRelay {

    private final int batchSize;

    public NaiveRelay(String name, DataSource dataSource, String qualifiedTable, String bootstrapServers,
            Properties producerOverrides, int batchSize) {
        super(name, dataSource, qualifiedTable, bootstrapServers, producerOverrides);
        this.batchSize = batchSize;
    }

    @Override
    protected int pollOnce(Connection c) throws Exception {
        int n = 0;
        try (PreparedStatement select = c.prepareStatement("SELECT id, event_id, topic, partition_key, payload::text"
                + " FROM " + table + " WHERE state = 'PENDING' ORDER BY id LIMIT ? FOR UPDATE SKIP LOCKED");
                PreparedStatement mark = c.prepareStatement("UPDATE " + table
                        + " SET state = 'PUBLISHED', published_at = now() WHERE id = ?")) {
            select.setInt(1, batchSize);
            try (ResultSet rs = select.executeQuery()) {
                while (rs.next()) {
                    producer.send(record(rs.getString(3), rs.getString(4), rs.getString(5),
                            (UUID) rs.getObject(2))).get();
                    mark.setLong(1, rs.getLong(1));
                    mark.executeUpdate();
                    n++;
                }
            }
            c.commit();
        } catch (Exception e) {
            rollbackQuietly(c);
            throw e;
        }
        countSent(n);
        return n;
    }
}
