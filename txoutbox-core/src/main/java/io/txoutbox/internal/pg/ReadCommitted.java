package io.txoutbox.internal.pg;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.SQLException;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * READ COMMITTED on every connection txoutbox takes from a data source, whatever the pool's or the database's default
 * ({@code default_transaction_isolation}).
 *
 * <p>Why: the claim floor reads the id sequence, then the writers that still hold the table, then claims — and relies
 * on the claim seeing every row committed before the lock read, which only a fresh snapshot per statement gives. Under
 * REPEATABLE READ or SERIALIZABLE the claim reuses the snapshot of the transaction's first statement, so a writer that
 * commits in between is neither a holder nor visible, the floor passes its row and a later event of its key goes out
 * first. A partition drop that moves dead rows likewise must read them after its lock wait, not before. None of
 * txoutbox's own transactions needs more than READ COMMITTED: their exclusion comes from advisory locks and row
 * states checked in each UPDATE's WHERE clause.
 *
 * <p>The setting is per session ({@link Connection#setTransactionIsolation}, which pgjdbc sends as {@code SET SESSION
 * CHARACTERISTICS}, outside any transaction) and the caller's level is restored before the connection goes back to
 * its pool. A pool that tracks the level itself (HikariCP marks a connection whose level was set through it and resets
 * it to the pool's default on return) sees the same calls, so either way the next borrower gets what it had.
 * Transactions txoutbox runs on the caller's connection ({@code Outbox.publish}, {@code Inbox.receive},
 * {@code Inbox.once}) keep the caller's level: they insert under a unique key, which is correct at every level.
 */
public final class ReadCommitted {

    private static final Logger log = LoggerFactory.getLogger(ReadCommitted.class);

    private ReadCommitted() {
    }

    /**
     * A connection of {@code dataSource} set to READ COMMITTED; its {@code close()} rolls back what is still open,
     * restores the level it had and then closes (returns) it.
     */
    public static Connection open(DataSource dataSource) throws SQLException {
        Connection c = dataSource.getConnection();
        int previous;
        try {
            previous = pin(c);
        } catch (SQLException | RuntimeException e) {
            try {
                c.close();
            } catch (SQLException suppressed) {
                e.addSuppressed(suppressed);
            }
            throw e;
        }
        if (previous == Connection.TRANSACTION_READ_COMMITTED) {
            return c;
        }
        return (Connection) Proxy.newProxyInstance(ReadCommitted.class.getClassLoader(),
                new Class<?>[] {Connection.class}, (proxy, method, args) -> {
                    if (method.getName().equals("close") && method.getParameterCount() == 0) {
                        try {
                            restore(c, previous);
                        } finally {
                            c.close();
                        }
                        return null;
                    }
                    try {
                        return method.invoke(c, args);
                    } catch (InvocationTargetException e) {
                        throw e.getCause();
                    }
                });
    }

    /** Work inside one transaction of an operator call. */
    @FunctionalInterface
    public interface Work<T> {
        T run(Connection c) throws SQLException;
    }

    /**
     * Runs {@code work} in one READ COMMITTED transaction on a connection of its own and commits it; on a failure
     * rolls back and rethrows the work's failure, the rollback's own failure (a session that died in the work cannot
     * roll back) attached as suppressed. For operator calls (admin, status) only: a lane's fencing is its session, so
     * nothing in a lane's path may take a new connection for its work.
     */
    public static <T> T transaction(DataSource dataSource, Work<T> work) throws SQLException {
        try (Connection c = open(dataSource)) {
            boolean autoCommit = c.getAutoCommit();
            c.setAutoCommit(false);
            try {
                T result = work.run(c);
                c.commit();
                return result;
            } catch (SQLException | RuntimeException e) {
                try {
                    c.rollback();
                } catch (SQLException rollback) {
                    e.addSuppressed(rollback);
                }
                throw e;
            } finally {
                try {
                    if (!c.isClosed()) {
                        c.setAutoCommit(autoCommit);
                    }
                } catch (SQLException ignored) {
                    // a broken session is left to its pool
                }
            }
        }
    }

    /**
     * Sets READ COMMITTED on a connection with no transaction open (autocommit on, or just committed); returns the
     * level it had, for {@link #restore}. No round trip to change anything when it is READ COMMITTED already.
     */
    public static int pin(Connection c) throws SQLException {
        int previous = c.getTransactionIsolation();
        if (previous != Connection.TRANSACTION_READ_COMMITTED) {
            c.setTransactionIsolation(Connection.TRANSACTION_READ_COMMITTED);
        }
        return previous;
    }

    /**
     * Gives the connection back the level {@link #pin} found (also after a {@code RESET ALL}, which falls back to the
     * session's start-up default rather than what a pool set); a broken connection is left to its pool.
     */
    public static void restore(Connection c, int previous) {
        try {
            if (!c.isClosed()) {
                if (!c.getAutoCommit()) {
                    c.rollback(); // the level cannot change inside a transaction; nothing of txoutbox's is open here
                }
                if (c.getTransactionIsolation() != previous) {
                    c.setTransactionIsolation(previous);
                }
            }
        } catch (SQLException e) {
            log.debug("txoutbox: could not restore the isolation level of a connection: {}", e.toString());
        }
    }
}
