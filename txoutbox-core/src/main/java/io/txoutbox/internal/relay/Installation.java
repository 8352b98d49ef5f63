package io.txoutbox.internal.relay;

import io.txoutbox.OutboxException;
import io.txoutbox.OutboxSchema;
import io.txoutbox.internal.pg.PgErrors;
import io.txoutbox.internal.pg.RelayStatements;
import io.txoutbox.spi.TransportLane;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.UUID;

/**
 * The outbox's installation id (schema version 8, {@code <outbox_table>_installation}): made once by migrate, read by
 * the relay when it starts and by each lane when it takes the lane, and handed to the transport in the lane's
 * {@link TransportLane}, from which the Kafka transport builds the lane's {@code transactional.id}.
 */
final class Installation {

    /** What one read found: the id, and where the outbox lives ({@code <database>/<schema>.<table>}). */
    record Id(UUID id, String outbox) {
        TransportLane lane(String name, int index, String instance) {
            return new TransportLane(name, index, id, outbox, instance, false);
        }
    }

    private Installation() {
    }

    /** Reads the id on {@code c} (in the connection's current transaction, if any). */
    static Id read(Connection c, RelayStatements statements) throws SQLException {
        OutboxSchema schema = statements.schema();
        String table = statements.installationTable();
        try (Statement st = c.createStatement(); ResultSet rs = st.executeQuery(statements.readInstallation())) {
            if (!rs.next()) {
                throw new OutboxException(table + " has no row, so the relay of " + schema + " has no "
                        + "installation id to name its lanes' fencing ids with: it was deleted. If no other outbox was "
                        + "copied from this one, give it a new id as the tables' owner (INSERT INTO " + table
                        + " (id) VALUES (gen_random_uuid())) with every relay of this outbox stopped");
            }
            return new Id(rs.getObject(1, UUID.class), rs.getString(2) + "/" + schema.schema() + "."
                    + schema.outboxTable());
        } catch (SQLException e) {
            if (PgErrors.is(e, PgErrors.UNDEFINED_TABLE)) {
                throw new OutboxException(schema + " has no installation id (" + table + " is missing): its "
                        + "schema is older than version 8. Run OutboxSchema.migrate (or V8__installation.sql) as the "
                        + "tables' owner, then start the relay", e, false);
            }
            throw e;
        }
    }
}
