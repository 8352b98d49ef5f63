package io.txoutbox.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.txoutbox.testing.postgres.PostgresExtension;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Locale;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * {@link BackendCheck} on direct connections: the guarded UPDATE keeps its update count; the guard refuses a
 * transaction on another session and on one whose setting was reset; acquisition refuses a connection whose lock is
 * held by another session. {@code -Dtxoutbox.backendCheck.cost=true} also prints what the guard costs per mark.
 */
class BackendCheckIT {

    @RegisterExtension
    static final PostgresExtension postgres = new PostgresExtension();

    private static final long KEY = 0x1234_5678_9abc_def0L;
    private static final boolean COST = Boolean.getBoolean("txoutbox.backendCheck.cost");
    private static final int ROWS = COST ? 200_000 : 1_000;

    @BeforeAll
    static void table() {
        postgres.database().execute("CREATE TABLE marks (id bigint PRIMARY KEY, state text NOT NULL)",
                "INSERT INTO marks SELECT g, 'PENDING' FROM generate_series(1, " + ROWS + ") g");
    }

    private static void lock(Connection c, long key) throws SQLException {
        try (Statement st = c.createStatement()) {
            st.execute("SELECT pg_advisory_lock(" + key + ")");
        }
    }

    private static int mark(Connection c, String sql, long from, int n) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(sql)) {
            Long[] ids = new Long[n];
            for (int i = 0; i < n; i++) {
                ids[i] = from + i;
            }
            ps.setArray(1, c.createArrayOf("bigint", ids));
            return ps.executeUpdate();
        }
    }

    private static final String MARK = "UPDATE marks SET state = CASE state WHEN 'PENDING' THEN 'PUBLISHED' ELSE "
            + "'PENDING' END WHERE id = ANY(?)";

    @Test
    void the_guarded_mark_keeps_its_count_on_the_owning_session_and_fails_on_any_other() throws Exception {
        try (Connection owner = postgres.database().connect(); Connection other = postgres.database().connect()) {
            lock(owner, KEY);
            BackendCheck check = new BackendCheck("relay");
            check.acquired(owner, KEY);
            String guarded = check.guard(MARK);
            owner.setAutoCommit(false);
            assertThat(mark(owner, guarded, 1, 100)).isEqualTo(100);
            owner.commit();

            // the same transaction text on another session: refused, and nothing is marked
            other.setAutoCommit(false);
            assertThatThrownBy(() -> mark(other, guarded, 1, 100))
                    .isInstanceOf(SQLException.class)
                    .satisfies(e -> assertThat(BackendCheck.isMismatch(e)).isTrue())
                    .satisfies(e -> assertThat(BackendCheck.message(e))
                            .startsWith("statements of one connection ran on backends ")
                            .contains("pool_mode=session").doesNotContain("Where:"));
            other.rollback();

            // the owning session after a RESET ALL (as a pooler's reset does): its SET is gone
            owner.setAutoCommit(true);
            try (Statement st = owner.createStatement()) {
                st.execute("RESET ALL");
            }
            owner.setAutoCommit(false);
            assertThatThrownBy(() -> mark(owner, guarded, 1, 100))
                    .satisfies(e -> assertThat(BackendCheck.message(e)).contains("SET made on backend"));
            owner.rollback();
        }
    }

    @Test
    void acquisition_refuses_a_connection_whose_lane_lock_another_session_holds() throws Exception {
        try (Connection holder = postgres.database().connect(); Connection other = postgres.database().connect()) {
            lock(holder, KEY + 1);
            assertThatThrownBy(() -> new BackendCheck("inbox worker").acquired(other, KEY + 1))
                    .isInstanceOf(BackendCheck.MismatchException.class)
                    .hasMessageContaining("statements of one connection ran on backends ")
                    .hasMessageContaining("between the inbox worker and PostgreSQL");
            assertThatThrownBy(() -> new BackendCheck("relay").acquired(other, KEY + 2))
                    .hasMessageContaining("is held by no backend");
            // and the guard needs a statement that ends with its WHERE condition
            lock(other, KEY + 4);
            BackendCheck check = new BackendCheck("relay");
            check.acquired(other, KEY + 4);
            assertThatThrownBy(() -> check.guard("UPDATE marks SET state = 'X' WHERE id = 1 RETURNING id"))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("WHERE condition");
            assertThatThrownBy(() -> check.guard("SELECT 1")).isInstanceOf(IllegalArgumentException.class);
        }
    }

    /** Not a check: figures for RELIABILITY.md, run with -Dtxoutbox.backendCheck.cost=true. */
    @Test
    void cost_per_mark() throws Exception {
        if (!COST) {
            return;
        }
        try (Connection c = postgres.database().connect()) {
            lock(c, KEY + 3);
            BackendCheck check = new BackendCheck("relay");
            check.acquired(c, KEY + 3);
            String guarded = check.guard(MARK);
            String separate = "SELECT pg_backend_pid() = 1";
            c.setAutoCommit(false);
            int batch = Integer.getInteger("txoutbox.backendCheck.batch", 100);
            int n = 3_000;
            // interleaved per iteration (plain, guarded, separate SELECT), so load changes hit all three alike
            long[][] nanos = new long[3][n];
            for (int i = -500; i < n; i++) {
                for (int kind = 0; kind < 3; kind++) {
                    long from = 1 + ((long) Math.floorMod(i * 3 + kind, ROWS / batch)) * batch;
                    long t0 = System.nanoTime();
                    if (kind == 2) {
                        try (Statement st = c.createStatement()) {
                            st.executeQuery(separate).close();
                        }
                    }
                    mark(c, kind == 1 ? guarded : MARK, from, batch);
                    c.commit();
                    if (i >= 0) {
                        nanos[kind][i] = System.nanoTime() - t0;
                    }
                }
            }
            for (long[] k : nanos) {
                java.util.Arrays.sort(k);
            }
            System.out.printf(Locale.ROOT, "BackendCheck cost, batch %d, %d marks each: UPDATE+commit p10/median "
                    + "%.0f/%.0f us plain, %.0f/%.0f us guarded (one more condition on the UPDATE), %.0f/%.0f us with a "
                    + "separate SELECT%n", batch, n,
                    nanos[0][n / 10] / 1e3, nanos[0][n / 2] / 1e3, nanos[1][n / 10] / 1e3, nanos[1][n / 2] / 1e3,
                    nanos[2][n / 10] / 1e3, nanos[2][n / 2] / 1e3);
        }
    }
}
