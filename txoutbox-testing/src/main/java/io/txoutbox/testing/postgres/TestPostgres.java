package io.txoutbox.testing.postgres;

import io.txoutbox.testing.process.ProcStat;
import io.txoutbox.testing.process.Signals;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.postgresql.ds.PGSimpleDataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The PostgreSQL server that tests run against: the one named by {@code TXOUTBOX_TEST_JDBC_URL} (with
 * {@code TXOUTBOX_TEST_JDBC_USER} / {@code TXOUTBOX_TEST_JDBC_PASSWORD}), else an embedded PostgreSQL started once
 * per JVM with {@code synchronous_commit=on} and {@code wal_level=logical}.
 *
 * <p>The embedded server's major version is {@value #DEFAULT_VERSION} unless the system property
 * {@value #VERSION_PROPERTY} names another supported one ({@link #SUPPORTED_VERSIONS}); Maven passes
 * {@code -Dtxoutbox.test.postgres.version=17} on to the test JVMs. The binaries of the other majors are resources of
 * this module (unpacked from zonky's jars at build time), so one classpath serves all of them.
 *
 * <p>Tests never share state through it: {@link TestDatabase} gives each test class its own schema.
 */
public final class TestPostgres implements AutoCloseable {

    public static final String ENV_JDBC_URL = "TXOUTBOX_TEST_JDBC_URL";
    public static final String ENV_JDBC_USER = "TXOUTBOX_TEST_JDBC_USER";
    public static final String ENV_JDBC_PASSWORD = "TXOUTBOX_TEST_JDBC_PASSWORD";

    /** System property choosing the embedded server's major version. */
    public static final String VERSION_PROPERTY = "txoutbox.test.postgres.version";
    public static final String DEFAULT_VERSION = "15";
    public static final List<String> SUPPORTED_VERSIONS = List.of("15", "16", "17", "18");
    private static final String BINARIES = "/io/txoutbox/testing/postgres/binaries/";

    private static final Logger log = LoggerFactory.getLogger(TestPostgres.class);
    private static volatile TestPostgres shared;

    private final String jdbcUrl;
    private final String user;
    private final String password;
    /** How the embedded server was built (its data directory and port included), for {@link #restart}; else null. */
    private final EmbeddedPostgres.Builder builder;
    private final File dataDirectory;
    private EmbeddedPostgres embedded;
    private boolean closed;
    /** A file each embedded server's cost line is appended to when it stops (the build sets it per module). */
    public static final String COST_LOG_PROPERTY = "txoutbox.test.postgres.cost-log";
    private long costSessions;
    private long costTicks;

    private TestPostgres(String jdbcUrl, String user, String password, EmbeddedPostgres.Builder builder,
            File dataDirectory, EmbeddedPostgres embedded) {
        this.jdbcUrl = jdbcUrl;
        this.user = user;
        this.password = password;
        this.builder = builder;
        this.dataDirectory = dataDirectory;
        this.embedded = embedded;
    }

    /** The server for this JVM, started on first use and stopped by a shutdown hook. */
    public static TestPostgres shared() {
        TestPostgres s = shared;
        if (s == null) {
            synchronized (TestPostgres.class) {
                s = shared;
                if (s == null) {
                    s = startFromEnvironmentOrEmbedded();
                    shared = s;
                    TestPostgres started = s;
                    Runtime.getRuntime().addShutdownHook(new Thread(started::close, "txoutbox-testing-postgres-stop"));
                }
            }
        }
        return s;
    }

    private static TestPostgres startFromEnvironmentOrEmbedded() {
        String url = System.getenv(ENV_JDBC_URL);
        if (url != null && !url.isBlank()) {
            String user = envOr(ENV_JDBC_USER, "postgres");
            String password = envOr(ENV_JDBC_PASSWORD, "");
            log.info("txoutbox-testing: using PostgreSQL from {}: {}", ENV_JDBC_URL, url);
            return new TestPostgres(url, user, password, null, null, null);
        }
        return startEmbedded();
    }

    /** Starts a new private embedded PostgreSQL (for tests that must stop or restart the server). */
    public static TestPostgres startEmbedded() {
        return startEmbedded(Map.of());
    }

    /**
     * Starts a new private embedded PostgreSQL with server settings added to (or replacing) the usual ones, e.g.
     * {@code Map.of("track_commit_timestamp", "on")}.
     */
    public static TestPostgres startEmbedded(Map<String, String> serverConfig) {
        String version = embeddedVersion();
        try {
            long t0 = System.nanoTime();
            EmbeddedPostgres.Builder builder = EmbeddedPostgres.builder()
                    .setServerConfig("synchronous_commit", "on")
                    .setServerConfig("wal_level", "logical")
                    .setServerConfig("max_wal_senders", "10")
                    .setServerConfig("max_replication_slots", "10")
                    .setServerConfig("max_connections", "300")
                    .setServerConfig("fsync", "off")
                    .setServerConfig("full_page_writes", "off")
                    .setServerConfig("shared_buffers", "256MB")
                    .setServerConfig("max_prepared_transactions", "0");
            serverConfig.forEach(builder::setServerConfig);
            if (!version.equals(DEFAULT_VERSION)) {
                builder.setPgBinaryResolver((system, hardware) -> binaries(version, system, hardware));
            }
            // the data directory is named here and kept by the server's close, so that a restart finds it; this
            // class deletes it on close (and zonky deletes such directories it finds unlocked and stale)
            File dataDirectory = new File(workingDirectory(), UUID.randomUUID().toString());
            builder.setDataDirectory(dataDirectory).setCleanDataDirectory(false)
                    .setPGStartupWait(Duration.ofMinutes(1));
            EmbeddedPostgres pg = builder.start();
            builder.setPort(pg.getPort());
            String url = pg.getJdbcUrl("postgres", "postgres");
            log.info("txoutbox-testing: embedded PostgreSQL {} started in {} ms at {}", version,
                    (System.nanoTime() - t0) / 1_000_000, url);
            return new TestPostgres(url, "postgres", "postgres", builder, dataDirectory, pg);
        } catch (IOException e) {
            throw new UncheckedIOException("could not start embedded PostgreSQL " + version, e);
        }
    }

    /** The major version an embedded server gets: {@value #VERSION_PROPERTY}, else {@value #DEFAULT_VERSION}. */
    public static String embeddedVersion() {
        String v = System.getProperty(VERSION_PROPERTY, "").trim();
        if (v.isEmpty()) {
            return DEFAULT_VERSION;
        }
        if (!SUPPORTED_VERSIONS.contains(v)) {
            throw new IllegalArgumentException(VERSION_PROPERTY + " must be one of " + SUPPORTED_VERSIONS + ", was '"
                    + v + "'");
        }
        return v;
    }

    private static InputStream binaries(String version, String system, String hardware) throws IOException {
        String name = BINARIES + version + "/postgres-" + system.toLowerCase(Locale.ROOT) + "-"
                + hardware.toLowerCase(Locale.ROOT) + ".txz";
        InputStream in = TestPostgres.class.getResourceAsStream(name);
        if (in == null) {
            throw new IOException("no PostgreSQL " + version + " binaries for " + system + "/" + hardware + " at "
                    + name + ": txoutbox-testing unpacks them at build time (maven-dependency-plugin, postgres-binaries)");
        }
        return in;
    }

    private static String envOr(String name, String fallback) {
        String v = System.getenv(name);
        return v == null ? fallback : v;
    }

    /** JDBC URL of the server's database (no schema selected). */
    public String jdbcUrl() {
        return jdbcUrl;
    }

    public String user() {
        return user;
    }

    public String password() {
        return password;
    }

    /** Port of the server, parsed from the JDBC URL. */
    public int port() {
        String rest = jdbcUrl.substring(jdbcUrl.indexOf("//") + 2);
        int colon = rest.indexOf(':');
        int slash = rest.indexOf('/');
        return colon < 0 || colon > slash ? 5432 : Integer.parseInt(rest.substring(colon + 1, slash));
    }

    /** A data source for the server's database, with the given extra pgjdbc properties. */
    public PGSimpleDataSource dataSource() {
        PGSimpleDataSource ds = new PGSimpleDataSource();
        ds.setURL(jdbcUrl);
        ds.setUser(user);
        ds.setPassword(password);
        return ds;
    }

    public Connection connect(Properties extra) throws SQLException {
        Properties p = new Properties();
        p.setProperty("user", user);
        p.setProperty("password", password);
        if (extra != null) {
            p.putAll(extra);
        }
        return DriverManager.getConnection(jdbcUrl, p);
    }

    public Connection connect() throws SQLException {
        return connect(null);
    }

    /** Creates a fresh, uniquely named schema on this server. */
    public TestDatabase newDatabase(String hint) {
        return TestDatabase.create(this, hint);
    }

    public boolean isEmbedded() {
        return builder != null;
    }

    /**
     * Stops a private embedded server the way a crash does: SIGQUIT to the postmaster, which is
     * {@code pg_ctl stop -m immediate} — every connection is cut, nothing is checkpointed, and the next
     * {@link #restart} replays the WAL. Returns when the postmaster has exited.
     *
     * @throws IllegalStateException for a server this class did not start, or one not running
     */
    public synchronized void crash() {
        EmbeddedPostgres running = runningEmbedded("crash");
        long pid = postmasterPid();
        ProcessHandle postmaster = ProcessHandle.of(pid).orElseThrow(() -> new IllegalStateException(
                "the postmaster of " + dataDirectory + " (pid " + pid + ") is not running"));
        Signals.send(pid, "QUIT");
        try {
            postmaster.onExit().get(60, TimeUnit.SECONDS);
        } catch (Exception e) {
            throw new IllegalStateException("the postmaster (pid " + pid + ") did not exit within 60 s of SIGQUIT", e);
        }
        embedded = null;
        try {
            running.close(); // its pg_ctl stop finds no server (and logs so); this releases its lock on the directory
        } catch (IOException e) {
            log.warn("txoutbox-testing: releasing the crashed server's data directory failed", e);
        }
        log.info("txoutbox-testing: embedded PostgreSQL on port {} crashed (immediate shutdown)", port());
    }

    /**
     * Starts a server stopped by {@link #crash} again: the same data directory, port and settings. Returns once it
     * accepts connections, after its crash recovery.
     */
    public synchronized void restart() {
        if (builder == null || closed) {
            throw new IllegalStateException("restart needs an embedded server of this class that is not closed");
        }
        if (embedded != null) {
            throw new IllegalStateException("the server on port " + port() + " is running: crash() it first");
        }
        long t0 = System.nanoTime();
        // zonky deletes unlocked data directories whose lock file is ten minutes old when a server starts: not this one
        new File(dataDirectory, "epg-lock").setLastModified(System.currentTimeMillis());
        try {
            embedded = builder.start();
        } catch (IOException e) {
            throw new UncheckedIOException("could not restart embedded PostgreSQL in " + dataDirectory, e);
        }
        log.info("txoutbox-testing: embedded PostgreSQL restarted on port {} in {} ms", port(),
                (System.nanoTime() - t0) / 1_000_000);
    }

    private EmbeddedPostgres runningEmbedded(String action) {
        if (builder == null || closed) {
            throw new IllegalStateException(action + " needs an embedded server of this class that is not closed");
        }
        if (embedded == null) {
            throw new IllegalStateException("the server on port " + port() + " is not running");
        }
        return embedded;
    }

    private long postmasterPid() {
        try {
            return Long.parseLong(Files.readAllLines(dataDirectory.toPath().resolve("postmaster.pid")).get(0).strip());
        } catch (IOException e) {
            throw new UncheckedIOException("could not read the postmaster's pid in " + dataDirectory, e);
        }
    }

    /** Stops an embedded server and deletes its data (a server from the environment is left alone). Idempotent. */
    @Override
    public synchronized void close() {
        if (builder != null && !closed) {
            closed = true;
            if (embedded != null) {
                logCost("stop");
                try {
                    embedded.close();
                } catch (IOException e) {
                    log.warn("txoutbox-testing: embedded PostgreSQL did not stop cleanly", e);
                }
            }
            try (Stream<Path> files = Files.walk(dataDirectory.toPath())) {
                files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
            } catch (IOException e) {
                log.warn("txoutbox-testing: could not delete {}", dataDirectory, e);
            }
        }
    }

    /**
     * Appends what the server cost since the previous line to the file {@value #COST_LOG_PROPERTY} names (the build
     * sets it per module): the sessions started (each a forked backend) and the CPU of the postmaster with its ended
     * backends. A backend start is the harness's most expensive step on a machine where fork is slow (25 ms of CPU
     * per connection on the CI machine), so a test that opens a connection per poll shows here. Called when a
     * {@link TestDatabase} closes (the label names its schema) and before the server stops.
     */
    synchronized void logCost(String label) {
        if (System.getProperty(COST_LOG_PROPERTY, "").isBlank() || embedded == null) {
            return;
        }
        try (Connection c = dataSource().getConnection()) {
            logCost(label, c);
        } catch (SQLException | RuntimeException e) {
            logCost(label, null); // at JVM exit the server may be stopping already: the CPU alone
        }
    }

    /** As {@link #logCost(String)}, counting the sessions on {@code c} (a session the caller has open anyway). */
    synchronized void logCost(String label, Connection c) {
        String file = System.getProperty(COST_LOG_PROPERTY, "");
        if (file.isBlank() || embedded == null) {
            return;
        }
        long sessions = -1;
        if (c != null) {
            try (java.sql.Statement st = c.createStatement();
                    java.sql.ResultSet rs = st.executeQuery("SELECT sum(sessions) FROM pg_stat_database")) {
                sessions = rs.next() ? rs.getLong(1) : -1;
            } catch (SQLException | RuntimeException e) {
                // the CPU alone
            }
        }
        long ticks = -1;
        try {
            String pid = Files.readAllLines(dataDirectory.toPath().resolve("postmaster.pid")).get(0).trim();
            // the postmaster and the backends it has reaped
            ticks = ProcStat.read(Long.parseLong(pid)).map(ProcStat.Stat::ticksWithChildren).orElse(-1L);
        } catch (IOException | RuntimeException e) {
            // not Linux: the sessions alone
        }
        String line = String.format(Locale.ROOT, "%s PostgreSQL %s port %d: sessions %+d, CPU %+.1f s (total %d, %.1f s)",
                label, embeddedVersion(), port(), sessions < 0 ? 0 : sessions - costSessions,
                ticks < 0 ? 0 : (ticks - costTicks) / (double) ProcStat.clockTicks(), sessions,
                ticks / (double) ProcStat.clockTicks());
        if (sessions >= 0) {
            costSessions = sessions;
        }
        if (ticks >= 0) {
            costTicks = ticks;
        }
        try {
            Files.writeString(Path.of(file), line + System.lineSeparator(), java.nio.file.StandardOpenOption.CREATE,
                    java.nio.file.StandardOpenOption.APPEND);
        } catch (IOException e) {
            log.warn("txoutbox-testing: could not append to {}: {}", file, e.getMessage());
        }
    }

    /** Where zonky puts its data directories: {@code ot.epg.working-dir}, else {@code <tmp>/embedded-pg}. */
    private static File workingDirectory() {
        return new File(System.getProperty("ot.epg.working-dir",
                new File(System.getProperty("java.io.tmpdir"), "embedded-pg").getPath()));
    }
}
