package io.txoutbox.internal.relay;

import io.txoutbox.RelayConfig;
import io.txoutbox.internal.SessionLease;
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
            // the claim's per-row probe of the waiting index is costed per candidate (about 68,000 for 2,000 rows):
            // past jit_above_cost JIT compilation alone took 60 ms of a 30 ms claim (PostgreSQL 15)
            st.execute("SET jit = off");
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
