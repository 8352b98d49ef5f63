package io.txoutbox.testing.baseline;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.util.Properties;
import java.util.UUID;
import javax.sql.DataSource;

/**
 * A relay that remembers the highest id it sent and asks for {@code id > last}: ids are taken at INSERT but become
 * visible at COMMIT, so a transaction that took a lower id and commits late is skipped for ever
 * (kafka-connect-jdbc #915, watermill #311).
 */
public final class IdCursorRelay extends BaselineRelay {

    private long lastId;

    public IdCursorRelay(String name, DataSource dataSource, String qualifiedTable, String bootstrapServers,
            Properties producerOverrides) {
        super(name, dataSource, qualifiedTable, bootstrapServers, producerOverrides);
    }

    @Override
    protected int pollOnce(Connection c) throws Exception {
        int n = 0;
        try (PreparedStatement select = c.prepareStatement("SELECT id, event_id, topic, partition_key, payload::text"
                + " FROM " + table + " WHERE id > ? ORDER BY id LIMIT 500")) {
            select.setLong(1, lastId);
            try (ResultSet rs = select.executeQuery()) {
                while (rs.next()) {
                    producer.send(record(rs.getString(3), rs.getString(4), rs.getString(5),
                            (UUID) rs.getObject(2)));
                    lastId = rs.getLong(1);
                    n++;
                }
            }
            producer.flush();
            c.commit();
        } catch (Exception e) {
            rollbackQuietly(c);
            throw e;
        }
        countSent(n);
        return n;
    }
}
