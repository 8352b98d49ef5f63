package io.txoutbox.internal.inbox;

import io.txoutbox.OutboxException;
import io.txoutbox.internal.pg.PgErrors;
import java.sql.SQLException;

/**
 * The default split of handler failures: permanent (retrying cannot help until something changes: bad input, a rule
 * violation, a missing table) or transient (a lost connection, a serialization failure, a timeout, anything else).
 */
public final class HandlerFailures {

    private HandlerFailures() {
    }

    /**
     * Permanent: an {@link OutboxException} that is not retriable, or an {@link SQLException} that
     * {@link PgErrors} classifies as non-retriable (SQLState classes 22, 23, 42, …), anywhere in the cause chain
     * before a retriable one.
     */
    public static boolean isPermanent(Throwable t) {
        int depth = 0;
        for (Throwable c = t; c != null && depth++ < 20; c = c.getCause()) {
            if (c instanceof SQLException se) {
                return !PgErrors.isRetriable(se);
            }
            if (c instanceof OutboxException oe && !(oe.getCause() instanceof SQLException)
                    && !(oe.getCause() instanceof OutboxException)) {
                return !oe.isRetriable();
            }
        }
        return false;
    }

    /** A short description for {@code last_error} and logs: class and message, never a payload. */
    static String describe(Throwable t, int max) {
        String s = t.getClass().getName() + ": " + t.getMessage();
        return s.length() <= max ? s : s.substring(0, max) + "…";
    }
}
