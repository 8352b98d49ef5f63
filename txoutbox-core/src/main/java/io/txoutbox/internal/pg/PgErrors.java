package io.txoutbox.internal.pg;

import java.sql.SQLException;

/**
 * PostgreSQL's SQLStates that txoutbox acts on, by name, and the one classifier of errors.
 *
 * <p>By class: connection problems ({@code 08}), transaction rollbacks such as serialization failures and
 * deadlocks ({@code 40}), insufficient resources ({@code 53}), operator intervention and shutdown ({@code 57}, e.g.
 * a statement or lock timeout) and system errors ({@code 58}) are retriable; data errors ({@code 22}), constraint
 * violations ({@code 23}) and syntax or missing objects ({@code 42}) repeat until something changes — among them a
 * missing privilege ({@code 42501}), on which the relay, the inbox worker and the retention job stop instead of
 * retrying.
 */
public final class PgErrors {

    public static final String CHECK_VIOLATION = "23514";
    public static final String INSUFFICIENT_PRIVILEGE = "42501";
    public static final String UNDEFINED_TABLE = "42P01";
    public static final String UNDEFINED_COLUMN = "42703";
    public static final String UNDEFINED_OBJECT = "42704";
    public static final String LOCK_NOT_AVAILABLE = "55P03";
    public static final String DEADLOCK_DETECTED = "40P01";
    public static final String QUERY_CANCELED = "57014";
    /** PostgreSQL 17+: {@code transaction_timeout} ended the session. */
    public static final String TRANSACTION_TIMEOUT = "25P04";

    private PgErrors() {
    }

    /** Whether {@code e} has this exact SQLState. */
    public static boolean is(SQLException e, String sqlState) {
        return sqlState.equals(e.getSQLState());
    }

    /** Whether {@code e} or an exception it was caused by has this exact SQLState. */
    public static boolean anyInChain(Throwable e, String sqlState) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof SQLException s && sqlState.equals(s.getSQLState())) {
                return true;
            }
        }
        return false;
    }

    /** A failure that can go away by itself: try again later. */
    public static boolean isRetriable(SQLException e) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof SQLException s && s.getSQLState() != null) {
                String cls = s.getSQLState().length() >= 2 ? s.getSQLState().substring(0, 2) : "";
                switch (cls) {
                    case "08", "40", "53", "57", "58" -> {
                        return true;
                    }
                    case "22", "23", "42", "0A", "28", "3D", "3F" -> {
                        return false;
                    }
                    default -> {
                        // look further down the chain
                    }
                }
            }
        }
        return e.getSQLState() == null; // no state: an I/O problem in the driver
    }

    /**
     * The session is gone: terminated by PostgreSQL (idle or admin timeouts, 57P0x; on 17+ the transaction timeout,
     * 25P04) or the connection broke (08).
     */
    public static boolean isSessionLost(SQLException e) {
        String state = e.getSQLState();
        return state != null && (state.startsWith("08") || state.startsWith("57P") || state.equals(TRANSACTION_TIMEOUT));
    }

    /** A lock that was not available in time, or a deadlock: the work can wait for its next turn. */
    public static boolean isLockBusy(SQLException e) {
        return is(e, LOCK_NOT_AVAILABLE) || is(e, DEADLOCK_DETECTED);
    }

    /** A lock or statement timeout, or a transaction rollback (serialization failure, deadlock). */
    public static boolean isContention(SQLException e) {
        String state = e.getSQLState();
        return state != null && (state.equals(LOCK_NOT_AVAILABLE) || state.equals(QUERY_CANCELED)
                || state.startsWith("40"));
    }
}
