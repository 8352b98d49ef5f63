package io.txoutbox.internal;

import io.txoutbox.internal.pg.Jdbc;
import io.txoutbox.internal.pg.LaneStatements;
import io.txoutbox.internal.pg.PgErrors;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.concurrent.ThreadLocalRandom;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

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
 *       lane's lock (pg_locks: granted, {@code pid = pg_backend_pid()}) and defines a session setting whose name is
 *       its own — {@code txoutbox.lane_<component>_<pid>_<random token>} = {@code on}; the second runs on the same
 *       backend and still sees it;</li>
 *   <li>at every mark (relay) and batch commit (inbox worker), inside the marking statement ({@link #guard}): one
 *       more condition on the {@code UPDATE}, true on the owning session, that reads that setting. Any other session
 *       has never defined the name, so {@code current_setting} fails there (SQLState 42704, "unrecognized
 *       configuration parameter"); on the owning session after a reset (a pooler's {@code DISCARD ALL} or
 *       {@code RESET ALL}) the value is empty and the condition reads a second name that no session defines, which
 *       fails the same way. The transaction rolls back; no extra round trip, no PL/pgSQL, and on the owning session
 *       the statement's result is unchanged.</li>
 * </ul>
 *
 * <p>A mismatch is a configuration error, not a transient fault: the lane refuses to run with {@link #message}.
 */
public final class BackendCheck {

    /** The SQLState of a mismatch found at acquisition. */
    public static final String SQLSTATE = "TXB01";
    private static final String PREFIX = "txoutbox.lane_";
    private static final String LOST = "_lost";
    private static final Pattern SETTING = Pattern.compile("txoutbox\\.lane_([a-z_]+?)_(\\d+)_[0-9a-f]+(" + LOST
            + ")?");
    /** A WHERE, and a RETURNING, as words between whitespace (a statement may be written on several lines). */
    private static final Pattern WHERE = Pattern.compile("(?i)\\sWHERE\\s");
    private static final Pattern RETURNING = Pattern.compile("(?i)\\sRETURNING\\s");

    private final String component;
    private final String word;
    private String setting;

    /** {@code component}: who is checked, for the message ("relay", "inbox worker"). */
    public BackendCheck(String component) {
        if (!component.matches("[a-z]+( [a-z]+)*")) {
            throw new IllegalArgumentException("BackendCheck component must be lower-case words: " + component);
        }
        this.component = component;
        this.word = component.replace(' ', '_');
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
     * backend holding it, and defines the setting {@link #guard} reads. Throws {@link MismatchException} otherwise.
     */
    public void acquired(Connection c, long laneKey) throws SQLException {
        String token = Long.toHexString(ThreadLocalRandom.current().nextLong() | Long.MIN_VALUE);
        int first;
        String holders;
        try (PreparedStatement ps = c.prepareStatement(LaneStatements.BACKEND_ACQUIRED)) {
            Jdbc.bind(ps, PREFIX + word + "_", token, laneKey >>> 32, laneKey & 0xffff_ffffL);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                first = rs.getInt(1);
                holders = rs.getString(3);
            }
        }
        if (holders == null) {
            throw new MismatchException("the lane's advisory lock, just taken on this connection, is held by no "
                    + "backend (this statement ran on backend " + first + "): " + cause(component));
        }
        if (!holders.equals(Integer.toString(first))) {
            throw new MismatchException(ranOn(holders, Integer.toString(first), component));
        }
        String name = PREFIX + word + "_" + first + "_" + token;
        try (PreparedStatement ps = c.prepareStatement(LaneStatements.BACKEND_SETTING_READ)) {
            ps.setString(1, name);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                int second = rs.getInt(1);
                if (second != first) {
                    throw new MismatchException(ranOn(Integer.toString(first), Integer.toString(second), component));
                }
                if (!"on".equals(rs.getString(2))) {
                    throw new MismatchException(lostSetting(Integer.toString(first), component));
                }
            }
        }
        setting = name;
    }

    /**
     * {@code sql} — an {@code UPDATE} (or {@code DELETE}) whose text ends with its {@code WHERE} condition — with one
     * more condition: the statement runs on the session {@link #acquired} proved, else it fails (see the class
     * comment). Its parameters keep their numbers; on the owning session its result is the same.
     */
    public String guard(String sql) {
        if (setting == null) {
            throw new IllegalStateException("BackendCheck.guard before acquired");
        }
        if (!WHERE.matcher(sql).find() || RETURNING.matcher(sql).find() || sql.contains(";")) {
            throw new IllegalArgumentException("BackendCheck.guard needs a statement that ends with its WHERE "
                    + "condition: " + sql);
        }
        // the name is ours: [a-z_0-9.], no quoting needed
        return sql + LaneStatements.backendGuard(setting, setting + LOST);
    }

    /**
     * The condition {@link #guard} appends, alone: for a statement whose WHERE is not its last clause (a data-modifying
     * {@code WITH} with {@code RETURNING}), to put where the rows it changes are chosen.
     */
    public String condition() {
        if (setting == null) {
            throw new IllegalStateException("BackendCheck.condition before acquired");
        }
        return LaneStatements.backendCondition(setting, setting + LOST);
    }

    /** Whether {@code t} (or a cause) is a mismatch found by this check, at acquisition or by the guard. */
    public static boolean isMismatch(Throwable t) {
        return mismatch(t) != null;
    }

    /** The mismatch's message, naming the cause and the fix, for a refusal; else {@code t}'s message. */
    public static String message(Throwable t) {
        SQLException e = mismatch(t);
        if (e == null) {
            return t.getMessage();
        }
        if (SQLSTATE.equals(e.getSQLState())) {
            return e.getMessage();
        }
        Matcher m = SETTING.matcher(String.valueOf(e.getMessage()));
        m.find();
        String component = m.group(1).replace('_', ' ');
        return m.group(3) != null ? lostSetting(m.group(2), component)
                : ranOn(m.group(2), "another", component);
    }

    private static SQLException mismatch(Throwable t) {
        for (Throwable c = t; c != null; c = c.getCause()) {
            // on another session the guard fails with 42704, "unrecognized configuration parameter"
            if (c instanceof SQLException e && (SQLSTATE.equals(e.getSQLState())
                    || PgErrors.UNDEFINED_OBJECT.equals(e.getSQLState()) && e.getMessage() != null
                    && SETTING.matcher(e.getMessage()).find())) {
                return e;
            }
            if (c.getCause() == c) {
                break;
            }
        }
        return null;
    }

    private static String ranOn(String lockHolder, String current, String component) {
        return "statements of one connection ran on backends " + lockHolder + " and " + current + ": "
                + cause(component);
    }

    private static String lostSetting(String backend, String component) {
        return "a SET made on backend " + backend + " is gone from its session (reset by a pooler, or another "
                + "session under the same pid): " + cause(component);
    }

    private static String cause(String component) {
        return "a connection pooler in transaction or statement mode is between the " + component + " and "
                + "PostgreSQL; session advisory locks and SET do not survive there, so lane ownership would not hold. "
                + "Connect the " + component + " directly or through a session-mode pool (PgBouncer "
                + "pool_mode=session)";
    }
}
