package io.txoutbox.testing.net;

import static org.assertj.core.api.Assertions.assertThat;

import io.txoutbox.testing.postgres.TestPostgres;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.HashSet;
import java.util.Properties;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(60)
class TransactionPoolingProxyIT {

    private static Connection connect(TransactionPoolingProxy proxy) throws SQLException {
        TestPostgres pg = TestPostgres.shared();
        Properties p = new Properties();
        p.setProperty("user", pg.user());
        p.setProperty("password", pg.password());
        return DriverManager.getConnection(proxy.jdbcUrl(pg.jdbcUrl()), p);
    }

    private static int pid(Statement st) throws SQLException {
        try (ResultSet rs = st.executeQuery("SELECT pg_backend_pid()")) {
            rs.next();
            return rs.getInt(1);
        }
    }

    @Test
    void consecutiveTransactionsOfOneConnectionRunOnDifferentBackendsATransactionOnOne() throws Exception {
        TestPostgres pg = TestPostgres.shared();
        try (TransactionPoolingProxy proxy = TransactionPoolingProxy.start("127.0.0.1", pg.port(), 3);
                Connection c = connect(proxy); Statement st = c.createStatement()) {
            int[] pids = new int[6];
            for (int i = 0; i < pids.length; i++) {
                pids[i] = pid(st);
            }
            // round-robin over three server connections: each autocommit statement on the next backend
            assertThat(pids[0]).isNotEqualTo(pids[1]);
            assertThat(pids[1]).isNotEqualTo(pids[2]);
            assertThat(pids[0]).isNotEqualTo(pids[2]);
            assertThat(pids[3]).isEqualTo(pids[0]);
            // session state stays on a backend: a SET is gone in the next statement, a lock is held by another pid
            st.execute("SET application_name = 'set-on-one-backend'");
            try (ResultSet rs = st.executeQuery("SELECT current_setting('application_name')")) {
                rs.next();
                assertThat(rs.getString(1)).isNotEqualTo("set-on-one-backend");
            }
            // a transaction stays on one backend from BEGIN to COMMIT
            c.setAutoCommit(false);
            int inTx = pid(st);
            assertThat(pid(st)).isEqualTo(inTx);
            st.execute("SELECT pg_sleep(0.01)");
            assertThat(pid(st)).isEqualTo(inTx);
            c.commit();
            c.setAutoCommit(true);
            // prepared statements with parameters (extended protocol, prepareThreshold=0)
            try (var ps = c.prepareStatement("SELECT ?::int + 1, pg_backend_pid()")) {
                Set<Integer> seen = new HashSet<>();
                for (int i = 0; i < 3; i++) {
                    ps.setInt(1, i);
                    try (ResultSet rs = ps.executeQuery()) {
                        rs.next();
                        assertThat(rs.getInt(1)).isEqualTo(i + 1);
                        seen.add(rs.getInt(2));
                    }
                }
                assertThat(seen).hasSize(3);
            }
        }
    }

    @Test
    void sessionModePinsAConnectionToItsBackendUntilSwitchedBack() throws Exception {
        TestPostgres pg = TestPostgres.shared();
        try (TransactionPoolingProxy proxy = TransactionPoolingProxy.start("127.0.0.1", pg.port(), 2);
                Connection c = connect(proxy); Statement st = c.createStatement()) {
            proxy.sessionMode(true);
            int first = pid(st);
            assertThat(pid(st)).isEqualTo(first);
            assertThat(pid(st)).isEqualTo(first);
            proxy.moveSessions(); // to another backend, pinned there
            int second = pid(st);
            assertThat(second).isNotEqualTo(first);
            assertThat(pid(st)).isEqualTo(second);
            proxy.sessionMode(false);
            pid(st); // ends on the pinned backend, which goes back to the pool
            assertThat(pid(st)).isNotEqualTo(pid(st));
            // a second client meanwhile gets a backend too
            try (Connection other = connect(proxy); Statement st2 = other.createStatement()) {
                assertThat(pid(st2)).isPositive();
            }
        }
    }
}
