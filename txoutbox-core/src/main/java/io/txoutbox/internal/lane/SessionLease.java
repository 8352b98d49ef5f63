package io.txoutbox.internal.lane;

import io.txoutbox.internal.pg.ReadCommitted;
import io.txoutbox.internal.pg.Jdbc;
import io.txoutbox.internal.pg.LaneStatements;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.Executor;

/**
 * Session settings of the connections txoutbox holds for a lane (the relay's lanes and membership, the inbox worker's
 * lanes), and their reset before a connection goes back to a pool.
 *
 * <p>The lease: a lane owns its shards through a session advisory lock, which PostgreSQL keeps for as long as the
 * session lives. {@code idle_session_timeout} (and {@code idle_in_transaction_session_timeout}) end the session of
 * a process that stopped talking — paused by GC or SIGSTOP — and TCP keepalives and {@code tcp_user_timeout} end
 * it when the network is cut, so the lock (and an open transaction's row locks and snapshot) is released within the
 * lease and another process takes the lane over. A live lane talks at least every third of the lease (its work, or
 * a heartbeat while it waits).
 */
public final class SessionLease {

    private static final Executor DIRECT = Runnable::run;

    /**
     * What one kind of lane sets: {@code statement_timeout}, {@code lock_timeout},
     * {@code idle_in_transaction_session_timeout}, {@code transaction_timeout} (PostgreSQL 17+), the lease (idle
     * session, TCP keepalive and user timeouts, and with the statement timeout the client's network timeout), and
     * the {@code application_name} (from validated names only).
     */
    public record Settings(Duration statementTimeout, Duration lockTimeout, Duration idleInTransactionTimeout,
            Duration transactionTimeout, Duration leaseTimeout, String applicationName) {
        public Settings {
            Objects.requireNonNull(statementTimeout, "statementTimeout");
            Objects.requireNonNull(lockTimeout, "lockTimeout");
            Objects.requireNonNull(idleInTransactionTimeout, "idleInTransactionTimeout");
            Objects.requireNonNull(transactionTimeout, "transactionTimeout");
            Objects.requireNonNull(leaseTimeout, "leaseTimeout");
            Objects.requireNonNull(applicationName, "applicationName");
        }
    }

    private SessionLease() {
    }

    /** Applies {@code settings}; returns the isolation level the connection had, for {@link #reset}. */
    public static int configure(Connection c, Settings settings) throws SQLException {
        int isolation = ReadCommitted.pin(c);
        long lease = settings.leaseTimeout().toMillis();
        // one SELECT of set_config calls (what it returns is not needed)
        Jdbc.queryString(c, LaneStatements.SESSION_SETTINGS, Long.toString(settings.statementTimeout().toMillis()),
                Long.toString(settings.lockTimeout().toMillis()),
                Long.toString(settings.idleInTransactionTimeout().toMillis()), Long.toString(lease),
                Long.toString(Math.max(1, lease / 3000)), Long.toString(lease), settings.applicationName());
        try (Statement st = c.createStatement()) {
            if (serverVersionNum(st) >= 170_000) {
                // PostgreSQL 17+: a bound on the whole transaction, also one busy with several statements that each
                // stay under statement_timeout (earlier versions bound only each statement and each idle gap)
                Jdbc.queryString(c, LaneStatements.TRANSACTION_TIMEOUT,
                        Long.toString(settings.transactionTimeout().toMillis()));
            }
        }
        // the client side of the lease: a frozen network must not hang a statement for longer
        c.setNetworkTimeout(DIRECT, (int) Math.min(Integer.MAX_VALUE,
                settings.statementTimeout().toMillis() + lease));
        return isolation;
    }

    public static int serverVersionNum(Statement st) throws SQLException {
        try (ResultSet rs = st.executeQuery(LaneStatements.SERVER_VERSION_NUM)) {
            rs.next();
            return Integer.parseInt(rs.getString(1));
        }
    }

    /** Ends what the session holds and gives back the settings it had, {@code isolation} from {@link #configure}. */
    public static void reset(Connection c, int isolation) throws SQLException {
        if (!c.getAutoCommit()) {
            c.rollback();
            c.setAutoCommit(true);
        }
        try (Statement st = c.createStatement()) {
            st.execute(LaneStatements.UNLOCK_ALL);
            st.execute(LaneStatements.RESET_ALL);
        }
        ReadCommitted.restore(c, isolation);
        c.setNetworkTimeout(DIRECT, 0);
    }
}
