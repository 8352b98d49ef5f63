package io.txoutbox.testing.history;

import java.sql.Connection;
import java.sql.SQLException;
import java.util.UUID;

/**
 * Writes the outbox row of one ledger event, inside the writer's open transaction (typically through the library's
 * {@code Outbox.publish}). It must neither commit, roll back nor close the connection.
 */
@FunctionalInterface
public interface EventInserter {

    /**
     * @param connection the writer's connection, autocommit off, transaction open
     * @param eventId    the id to give the event (the checker matches deliveries by it)
     * @param key        the ordering key; use it as the partition key
     * @param seq        the event's position in the key's order
     */
    void insert(Connection connection, UUID eventId, String key, long seq) throws SQLException;

    /** Inserts nothing: the ledger alone. */
    static EventInserter none() {
        return (connection, eventId, key, seq) -> { };
    }
}
