package io.txoutbox.internal.relay;

import io.txoutbox.RelayConfig;
import io.txoutbox.internal.ReadCommitted;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.concurrent.Executor;

/**
 * Session settings of the relay's own connections, and their reset before a connection goes back to a pool.
 *
 * <p>The lease: a lane owns its shards through a session advisory lock, which PostgreSQL keeps for as long as the
 * session lives. {@code idle_session_timeout} (and {@code idle_in_transaction_session_timeout}) end the session of
 * an instance that stopped talking — paused by GC or SIGSTOP — and TCP keepalives and {@code tcp_user_timeout} end
 * it when the network is cut, so the lock is released within the lease and a standby takes the lane over. A live
 * lane talks at least every third of the lease (claims, or a heartbeat while it waits).
 */
final class LaneSession {

    private static final Executor DIRECT = Runnable::run;

    private LaneSession() {
    }

    /** Returns the isolation level the connection had, for {@link #reset}. */
    static int configure(Connection c, RelayConfig config, String role) throws SQLException {
        int isolation = ReadCommitted.pin(c);
        long lease = config.leaseTimeout().toMillis();
        try (Statement st = c.createStatement()) {
            st.execute("SET statement_timeout = " + config.statementTimeout().toMillis());
            st.execute("SET lock_timeout = " + config.lockTimeout().toMillis());
            st.execute("SET idle_in_transaction_session_timeout = "
                    + Math.min(config.transactionTimeout().toMillis(), lease));
            if (serverVersionNum(st) >= 170_000) {
                // PostgreSQL 17+: a bound on the whole transaction, also one busy with several statements that each
                // stay under statement_timeout (earlier versions bound only each statement and each idle gap)
                st.execute("SET transaction_timeout = " + config.transactionTimeout().toMillis());
            }
            st.execute("SET idle_session_timeout = " + lease);
            st.execute("SET tcp_keepalives_idle = " + Math.max(1, lease / 3000));
            st.execute("SET tcp_keepalives_interval = 1");
            st.execute("SET tcp_keepalives_count = 3");
            st.execute("SET tcp_user_timeout = " + lease);
            st.execute("SET client_connection_check_interval = 1000");
            st.execute("SET plan_cache_mode = force_custom_plan");
            // the claim's per-row probe of the waiting index is costed per candidate (about 68,000 for 2,000 rows):
            // past jit_above_cost JIT compilation alone took 60 ms of a 30 ms claim (PostgreSQL 15)
            st.execute("SET jit = off");
            // names come from validated configuration: [A-Za-z0-9._-@:#]
            st.execute("SET application_name = 'txoutbox-relay " + role.replace("'", "") + "'");
        }
        // the client side of the lease: a frozen network must not hang a statement for longer
        c.setNetworkTimeout(DIRECT, (int) Math.min(Integer.MAX_VALUE,
                config.statementTimeout().toMillis() + lease));
        return isolation;
    }

    static int serverVersionNum(Statement st) throws SQLException {
        try (ResultSet rs = st.executeQuery("SHOW server_version_num")) {
            rs.next();
            return Integer.parseInt(rs.getString(1));
        }
    }

    /** Ends what the session holds and gives back the settings it had, {@code isolation} from {@link #configure}. */
    static void reset(Connection c, int isolation) throws SQLException {
        if (!c.getAutoCommit()) {
            c.rollback();
            c.setAutoCommit(true);
        }
        try (Statement st = c.createStatement()) {
            st.execute("SELECT pg_advisory_unlock_all()");
            st.execute("RESET ALL");
        }
        ReadCommitted.restore(c, isolation);
        c.setNetworkTimeout(DIRECT, 0);
    }
}
