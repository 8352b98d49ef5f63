package io.txoutbox.testing.postgres;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Locale;
import java.util.concurrent.ThreadLocalRandom;
import javax.sql.DataSource;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * One test class's own schema on the {@link TestPostgres} server. Its data source sets {@code search_path} to that
 * schema, so unqualified table names land in it. Dropped on {@link #close()}.
 */
public final class TestDatabase implements AutoCloseable {

    private final TestPostgres server;
    private final String schema;
    private final PGSimpleDataSource dataSource;
    private volatile boolean closed;

    private TestDatabase(TestPostgres server, String schema) {
        this.server = server;
        this.schema = schema;
        this.dataSource = server.dataSource();
        this.dataSource.setCurrentSchema(schema);
    }

    static TestDatabase create(TestPostgres server, String hint) {
        String clean = hint == null ? "t" : hint.toLowerCase(Locale.ROOT).replaceAll("[^a-z0-9_]", "_");
        if (clean.length() > 40) {
            clean = clean.substring(clean.length() - 40);
        }
        String schema = "t_" + clean + "_" + Long.toString(ThreadLocalRandom.current().nextLong(1L << 40), 36);
        try (Connection c = server.connect(); Statement st = c.createStatement()) {
            st.execute("CREATE SCHEMA \"" + schema + "\"");
        } catch (SQLException e) {
            throw new IllegalStateException("could not create test schema " + schema, e);
        }
        return new TestDatabase(server, schema);
    }

    public TestPostgres server() {
        return server;
    }

    /** The schema's name (lower case, safe to use unquoted). */
    public String schema() {
        return schema;
    }

    /** A data source whose connections have {@code search_path} set to this schema. */
    public DataSource dataSource() {
        return dataSource;
    }

    /** JDBC URL that selects this schema through {@code currentSchema}. */
    public String jdbcUrl() {
        String url = server.jdbcUrl();
        return url + (url.contains("?") ? "&" : "?") + "currentSchema=" + schema;
    }

    public Connection connect() throws SQLException {
        return dataSource.getConnection();
    }

    /** Runs SQL statements in autocommit mode. */
    public void execute(String... sql) {
        try (Connection c = connect(); Statement st = c.createStatement()) {
            for (String s : sql) {
                st.execute(s);
            }
        } catch (SQLException e) {
            throw new IllegalStateException("SQL failed: " + e.getMessage(), e);
        }
    }

    /** Runs a query returning one number (count, max…); 0 when the result is NULL. */
    public long queryLong(String sql) {
        try (Connection c = connect(); Statement st = c.createStatement(); ResultSet rs = st.executeQuery(sql)) {
            return rs.next() ? rs.getLong(1) : 0L;
        } catch (SQLException e) {
            throw new IllegalStateException("SQL failed: " + e.getMessage(), e);
        }
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        try (Connection c = server.connect(); Statement st = c.createStatement()) {
            st.execute("DROP SCHEMA IF EXISTS \"" + schema + "\" CASCADE");
        } catch (SQLException e) {
            // a test that left a connection holding locks must not fail the next one
            org.slf4j.LoggerFactory.getLogger(TestDatabase.class)
                    .warn("txoutbox-testing: could not drop schema {}: {}", schema, e.getMessage());
        }
    }
}
