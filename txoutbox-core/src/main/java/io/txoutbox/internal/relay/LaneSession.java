package io.txoutbox.internal.relay;

import io.txoutbox.RelayConfig;
import io.txoutbox.internal.lane.SessionLease;
import io.txoutbox.internal.pg.RelayStatements;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;

/**
 * The relay's lane sessions ({@link SessionLease}, shared with the inbox worker): the relay's statement, lock and
 * transaction timeouts, the lease, and an idle-in-transaction bound of the transaction timeout or the lease,
 * whichever is shorter.
 */
final class LaneSession {

    private LaneSession() {
    }

    static SessionLease.Settings settings(RelayConfig config, String role) {
        // names come from validated configuration: [A-Za-z0-9._-@:#]
        return new SessionLease.Settings(config.statementTimeout(), config.lockTimeout(),
                min(config.transactionTimeout(), config.leaseTimeout()), config.transactionTimeout(),
                config.leaseTimeout(), "txoutbox-relay " + role);
    }

    /** Returns the isolation level the connection had, for {@link #reset}. */
    static int configure(Connection c, RelayConfig config, String role) throws SQLException {
        int isolation = SessionLease.configure(c, settings(config, role));
        try (Statement st = c.createStatement()) {
            st.execute(RelayStatements.JIT_OFF); // the claim's JIT compilation cost more than the claim
        }
        return isolation;
    }

    static int serverVersionNum(Statement st) throws SQLException {
        return SessionLease.serverVersionNum(st);
    }

    /** Ends what the session holds and gives back the settings it had, {@code isolation} from {@link #configure}. */
    static void reset(Connection c, int isolation) throws SQLException {
        SessionLease.reset(c, isolation);
    }

    private static Duration min(Duration a, Duration b) {
        return a.compareTo(b) <= 0 ? a : b;
    }
}
