package io.txoutbox.testing.postgres;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;

/**
 * One session of a test's own, kept open for its many small reads — a sampler, the polls of an await — on its
 * {@link TestDatabase}'s schema. {@link TestDatabase#queryLong} opens a session per call, and each costs PostgreSQL a
 * backend start (10-25 ms of server CPU on the 2-core machines that run the build), CPU taken from the code under
 * test: 956 sessions for one fault test's sampler in a CI run. The calls are serialized, so a sampler's thread and the
 * test's may share it. Closed with its database, or before.
 */
public final class TestSession implements AutoCloseable {

    private final Connection connection;

    TestSession(Connection connection) {
        this.connection = connection;
    }

    /** One number (count, max…) in autocommit; 0 when the result is NULL or empty. */
    public synchronized long queryLong(String sql) {
        return queryLong(connection, sql);
    }

    /** One number from {@code sql} on {@code c}; 0 when the result is NULL or empty. */
    static long queryLong(Connection c, String sql) {
        try (Statement st = c.createStatement(); ResultSet rs = st.executeQuery(sql)) {
            return rs.next() ? rs.getLong(1) : 0L;
        } catch (SQLException e) {
            throw new IllegalStateException("SQL failed: " + e.getMessage(), e);
        }
    }

    /**
     * The session's connection, for a test's own transactions; while it uses it, it must not share the session with
     * another thread's {@link #queryLong}.
     */
    public Connection connection() {
        return connection;
    }

    @Override
    public synchronized void close() {
        try {
            connection.close();
        } catch (SQLException e) {
            // already broken: nothing to release
        }
    }
}
