package io.txoutbox.testing.postgres;

import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.Function;
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
    private final List<String> roles = new CopyOnWriteArrayList<>();
    private final List<TestSession> sessions = new CopyOnWriteArrayList<>();
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

    /**
     * A data source for this schema whose sessions start with the given settings (pgjdbc's {@code options}), e.g.
     * {@code Map.of("default_transaction_isolation", "serializable")} stands for a pool or database default.
     */
    public DataSource dataSource(Map<String, String> sessionSettings) {
        PGSimpleDataSource ds = server.dataSource();
        ds.setCurrentSchema(schema);
        ds.setOptions(options(sessionSettings));
        return ds;
    }

    private static String options(Map<String, String> settings) {
        StringBuilder b = new StringBuilder();
        settings.forEach((k, v) -> b.append(b.length() == 0 ? "" : " ").append("-c ").append(k).append('=')
                .append(v.replace(" ", "\\ ")));
        return b.toString();
    }

    /**
     * Creates a login role that holds exactly {@code grants} (the statements for the role's name — lower case letters, digits and
     * underscores — run by the server's superuser) and, from {@code roleSettings}, {@code ALTER ROLE ... SET} defaults
     * for its sessions. The role is dropped with this database. Returns a data source logged in as the role, with
     * {@code search_path} set to this schema.
     */
    public DataSource loginRole(String hint, Function<String, ? extends Collection<String>> grants,
            Map<String, String> roleSettings) {
        String name = ("r_" + hint.toLowerCase(Locale.ROOT).replaceAll("[^a-z0-9_]", "_") + "_"
                + Long.toString(ThreadLocalRandom.current().nextLong(1L << 40), 36));
        String role = name.length() > 63 ? name.substring(name.length() - 63) : name;
        String password = "pw_" + Long.toString(ThreadLocalRandom.current().nextLong(1L << 50), 36);
        List<String> sql = new ArrayList<>();
        sql.add("CREATE ROLE \"" + role + "\" LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE PASSWORD '"
                + password + "'");
        roleSettings.forEach((k, v) -> sql.add("ALTER ROLE \"" + role + "\" SET " + k + " = '" + v + "'"));
        sql.addAll(grants.apply(role));
        roles.add(role);
        execute(sql.toArray(new String[0]));
        PGSimpleDataSource ds = server.dataSource();
        ds.setCurrentSchema(schema);
        ds.setUser(role);
        ds.setPassword(password);
        return ds;
    }

    /** A login role with exactly {@code grants}; see {@link #loginRole(String, Function, Map)}. */
    public DataSource loginRole(String hint, Function<String, ? extends Collection<String>> grants) {
        return loginRole(hint, grants, Map.of());
    }

    /** JDBC URL that selects this schema through {@code currentSchema}. */
    public String jdbcUrl() {
        String url = server.jdbcUrl();
        return url + (url.contains("?") ? "&" : "?") + "currentSchema=" + schema;
    }

    public Connection connect() throws SQLException {
        return dataSource.getConnection();
    }

    /**
     * A session kept open for a test's many small reads ({@link TestSession}); closed with this database. Prefer it to
     * {@link #queryLong} for anything polled: each of those opens a session of its own.
     */
    public TestSession session() {
        try {
            TestSession session = new TestSession(connect());
            sessions.add(session);
            return session;
        } catch (SQLException e) {
            throw new IllegalStateException("could not open a session on schema " + schema + ": " + e.getMessage(), e);
        }
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
        try (Connection c = connect()) {
            return TestSession.queryLong(c, sql);
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
        sessions.forEach(TestSession::close);
        try (Connection c = server.connect(); Statement st = c.createStatement()) {
            server.logCost(schema, c); // on the session opened for the drop: the count adds no session of its own
            st.execute("DROP SCHEMA IF EXISTS \"" + schema + "\" CASCADE");
            for (String role : roles) {
                st.execute("DROP OWNED BY \"" + role + "\"");
                st.execute("DROP ROLE \"" + role + "\"");
            }
        } catch (SQLException e) {
            // a test that left a connection holding locks must not fail the next one
            org.slf4j.LoggerFactory.getLogger(TestDatabase.class)
                    .warn("txoutbox-testing: could not drop schema {}: {}", schema, e.getMessage());
        }
    }
}
