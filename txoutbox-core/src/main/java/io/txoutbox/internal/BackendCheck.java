package io.txoutbox.internal;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Proof that a lane's statements run on the PostgreSQL session that holds the lane's advisory lock.
 *
 * <p>Behind a connection pooler in transaction or statement mode (PgBouncer {@code pool_mode=transaction} or
 * {@code statement}, and the like), consecutive transactions of one client connection run on different backends: the
 * session advisory lock that makes a lane's owner stays on the backend that took it, a {@code SET} on the backend it
 * ran on, and the lane's later claims and marks run elsewhere — ownership and fencing silently vanish. So the lane
 * checks:
 *
 * <ul>
 *   <li>at acquisition ({@link #acquired}), in two autocommit statements: the backend that runs the first holds the
 *       lane's lock (pg_locks: granted, {@code pid = pg_backend_pid()}) and remembers a random token in a session
 *       setting ({@code txoutbox.backend}); the second runs on the same backend and still sees the token;</li>
 *   <li>at every mark (relay) and batch commit (inbox worker), inside the marking transaction ({@link #guard}): the
 *       backend is the remembered one and still has the token (a session that lost its settings — a reset by a
 *       pooler, or a new session under a reused pid — has not). The check is a {@code DO} block sent with the mark's
 *       {@code UPDATE} in the same round trip, after it, so the statement's update count is unchanged; on a mismatch
 *       it raises {@value #SQLSTATE} and the transaction rolls back.</li>
 * </ul>
 *
 * <p>A mismatch is a configuration error, not a transient fault: the lane refuses to run with {@link #message}.
 */
public final class BackendCheck {

    /** The SQLState of a mismatch, raised by the guard and by {@link #acquired}. */
    public static final String SQLSTATE = "TXB01";
    private static final String SETTING = "txoutbox.backend";

    private final String component;
    private int pid;
    private String token;

    /** {@code component}: who is checked, for the message ("relay", "inbox worker"). */
    public BackendCheck(String component) {
        this.component = component;
    }

    /** A mismatch: the component's statements do not run on the session that holds its lane. */
    public static final class MismatchException extends SQLException {
        private static final long serialVersionUID = 1L;

        MismatchException(String message) {
            super(message, SQLSTATE);
        }
    }

    /**
     * After the lane's lock was taken on {@code c} (autocommit): proves that this connection's statements run on the
     * backend holding it, and remembers that backend for {@link #guard}. Throws {@link MismatchException} otherwise.
     */
    public void acquired(Connection c, long laneKey) throws SQLException {
        String newToken = Long.toHexString(ThreadLocalRandom.current().nextLong() | Long.MIN_VALUE);
        int first;
        String holders;
        try (PreparedStatement ps = c.prepareStatement("SELECT pg_backend_pid(), set_config('" + SETTING
                + "', ?, false), (SELECT string_agg(l.pid::text, ',' ORDER BY l.pid) FROM pg_locks l"
                + " WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1 AND l.classid::bigint = ?"
                + " AND l.objid::bigint = ? AND l.database = (SELECT oid FROM pg_database"
                + " WHERE datname = current_database()))")) {
            ps.setString(1, newToken);
            ps.setLong(2, laneKey >>> 32);
            ps.setLong(3, laneKey & 0xffff_ffffL);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                first = rs.getInt(1);
                holders = rs.getString(3);
            }
        }
        if (holders == null) {
            throw new MismatchException("the lane's advisory lock, just taken on this connection, is held by no "
                    + "backend (this statement ran on backend " + first + "): " + cause());
        }
        if (!holders.equals(Integer.toString(first))) {
            throw new MismatchException(ranOn(holders, first));
        }
        try (Statement st = c.createStatement();
                ResultSet rs = st.executeQuery("SELECT pg_backend_pid(), current_setting('" + SETTING
                        + "', true)")) {
            rs.next();
            int second = rs.getInt(1);
            if (second != first) {
                throw new MismatchException(ranOn(Integer.toString(first), second));
            }
            if (!newToken.equals(rs.getString(2))) {
                throw new MismatchException(lostSetting(first));
            }
        }
        pid = first;
        token = newToken;
    }

    /**
     * {@code sql} (one statement that returns no rows, e.g. the mark's {@code UPDATE}; its parameters keep their
     * numbers) followed, in the same round trip, by the check that it ran on the backend {@link #acquired} proved.
     * {@code executeUpdate} still returns the {@code UPDATE}'s count.
     */
    public String guard(String sql) {
        if (token == null) {
            throw new IllegalStateException("BackendCheck.guard before acquired");
        }
        // literals only (a DO block takes no parameters): the pid, a hex token, and fixed text without quotes
        return sql + "; DO $txoutbox$BEGIN IF pg_backend_pid() <> " + pid + " THEN RAISE EXCEPTION USING ERRCODE = '"
                + SQLSTATE + "', MESSAGE = 'statements of one connection ran on backends " + pid + " and ' || "
                + "pg_backend_pid() || ': " + cause() + "'; END IF; IF current_setting('" + SETTING + "', true) "
                + "IS DISTINCT FROM '" + token + "' THEN RAISE EXCEPTION USING ERRCODE = '" + SQLSTATE
                + "', MESSAGE = '" + lostSetting(pid) + "'; END IF; END$txoutbox$";
    }

    /** Whether {@code t} (or a cause) is a mismatch found by this check, on the client or in the database. */
    public static boolean isMismatch(Throwable t) {
        for (Throwable c = t; c != null; c = c.getCause()) {
            if (c instanceof SQLException e && SQLSTATE.equals(e.getSQLState())) {
                return true;
            }
            if (c.getCause() == c) {
                break;
            }
        }
        return false;
    }

    /** The mismatch's message (without pgjdbc's "ERROR: " prefix and position lines), for a refusal. */
    public static String message(Throwable t) {
        for (Throwable c = t; c != null; c = c.getCause()) {
            if (c instanceof SQLException e && SQLSTATE.equals(e.getSQLState())) {
                String m = String.valueOf(e.getMessage());
                m = m.startsWith("ERROR: ") ? m.substring("ERROR: ".length()) : m;
                int end = m.indexOf('\n');
                return end < 0 ? m : m.substring(0, end);
            }
            if (c.getCause() == c) {
                break;
            }
        }
        return t.getMessage();
    }

    private String ranOn(String lockHolder, int current) {
        return "statements of one connection ran on backends " + lockHolder + " and " + current + ": " + cause();
    }

    private String lostSetting(int backend) {
        return "a SET made on backend " + backend + " is gone from its session (reset, or another session under "
                + "the same pid): " + cause();
    }

    private String cause() {
        return "a connection pooler in transaction or statement mode is between the " + component + " and "
                + "PostgreSQL; session advisory locks and SET do not survive there, so lane ownership would not hold. "
                + "Connect the " + component + " directly or through a session-mode pool (PgBouncer "
                + "pool_mode=session)";
    }
}
