package io.txoutbox.internal;

import java.sql.SQLException;

/**
 * Classifies PostgreSQL errors by SQLState class: connection problems ({@code 08}), transaction rollbacks such as
 * serialization failures and deadlocks ({@code 40}), operator intervention and shutdown ({@code 57}, e.g. a
 * statement or lock timeout) are retriable; data errors ({@code 22}), constraint violations ({@code 23}) and
 * syntax or missing objects ({@code 42}) repeat until something changes — among them a missing privilege
 * ({@code 42501}), on which the relay, the inbox worker and the retention job stop instead of retrying
 * ({@link Privileges}).
 */
public final class SqlErrors {

    private SqlErrors() {
    }

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
}
