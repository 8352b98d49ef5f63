package io.txoutbox.bench;

import io.txoutbox.testing.kafka.KafkaBroker;
import io.txoutbox.testing.kafka.KafkaBrokerProcess;
import io.txoutbox.testing.postgres.TestPostgres;
import java.lang.management.ManagementFactory;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.ZonedDateTime;
import java.util.ArrayList;
import java.util.List;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.OptionalLong;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.common.utils.internals.AppInfoParser;
import org.postgresql.ds.PGSimpleDataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** The PostgreSQL server and Kafka broker a benchmark runs against, started here unless given; closed at the end. */
final class BenchEnv implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(BenchEnv.class);

    private final CommonOptions options;
    private final TestPostgres embeddedPostgres;
    private final KafkaBroker broker;
    private final KafkaBrokerProcess brokerProcess;
    private final PGSimpleDataSource dataSource;
    private final PGSimpleDataSource relayDataSource;
    private final String bootstrapServers;
    private final Admin admin;

    private final String startLoad = loadAverage();

    static String loadAverage() {
        try {
            String[] f = java.nio.file.Files.readString(java.nio.file.Path.of("/proc/loadavg")).split(" ");
            return f[0] + " " + f[1] + " " + f[2];
        } catch (java.io.IOException | RuntimeException e) {
            return "?";
        }
    }

    /**
     * The PostgreSQL role relays connect as on the embedded server: their statements apart in
     * {@code pg_stat_statements}, their sessions apart in {@code pg_stat_activity}.
     */
    static final String RELAY_ROLE = "txoutbox_relay";

    /** Services with the broker in this JVM unless {@code --broker process}. */
    BenchEnv(CommonOptions options) {
        this(options, false, false);
    }

    /**
     * @param brokerProcessByDefault the broker in its own JVM unless {@code --broker in-process}
     * @param measuresCost for {@link CostWindow}: the embedded server preloads {@code pg_stat_statements} and relays
     *     connect as {@link #RELAY_ROLE}
     */
    BenchEnv(CommonOptions options, boolean brokerProcessByDefault, boolean measuresCost) {
        this.options = options;
        boolean process = options.brokerProcess(brokerProcessByDefault); // a bad --broker fails before any start
        if (options.jdbcUrl == null) {
            Map<String, String> settings = new LinkedHashMap<>();
            if (measuresCost) {
                settings.put("shared_preload_libraries", "pg_stat_statements");
            }
            settings.putAll(options.pgSettings);
            embeddedPostgres = TestPostgres.startEmbedded(settings);
            dataSource = embeddedPostgres.dataSource();
            relayDataSource = measuresCost ? createRelayRole() : dataSource;
        } else {
            if (!options.pgSettings.isEmpty()) {
                throw new IllegalArgumentException("--pg-setting applies to the embedded server only; set "
                        + options.pgSettings.keySet() + " on the server of --jdbc-url yourself");
            }
            embeddedPostgres = null;
            dataSource = new PGSimpleDataSource();
            dataSource.setURL(options.jdbcUrl);
            dataSource.setUser(options.jdbcUser);
            dataSource.setPassword(options.jdbcPassword);
            relayDataSource = dataSource;
        }
        if (options.bootstrapServers != null) {
            broker = null;
            brokerProcess = null;
            bootstrapServers = options.bootstrapServers;
        } else if (process) {
            broker = null;
            KafkaBrokerProcess.Builder b = KafkaBrokerProcess.builder()
                    // full JIT as in-process (the harness's default is C1 only, for fast starts in tests)
                    .jvmArgs("-XX:TieredStopAtLevel=4", "-Xmx1g");
            options.brokerProperties.forEach(b::property);
            brokerProcess = b.start();
            bootstrapServers = brokerProcess.bootstrapServers();
        } else {
            KafkaBroker.Builder b = KafkaBroker.builder();
            options.brokerProperties.forEach(b::property);
            broker = b.start();
            brokerProcess = null;
            bootstrapServers = broker.bootstrapServers();
        }
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers);
        admin = Admin.create(p);
    }

    private PGSimpleDataSource createRelayRole() {
        execute("CREATE ROLE " + RELAY_ROLE + " LOGIN SUPERUSER PASSWORD '" + RELAY_ROLE + "'");
        try {
            execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements");
        } catch (IllegalStateException e) {
            log.warn("pg_stat_statements is not available (round trips and WAL per role not measured): {}",
                    e.getMessage());
        }
        PGSimpleDataSource ds = new PGSimpleDataSource();
        ds.setURL(embeddedPostgres.jdbcUrl());
        ds.setUser(RELAY_ROLE);
        ds.setPassword(RELAY_ROLE);
        ds.setApplicationName("bench-relay");
        return ds;
    }

    PGSimpleDataSource dataSource() {
        return dataSource;
    }

    /** The data source of relays: the relay's own role on the embedded server. */
    PGSimpleDataSource relayDataSource() {
        return relayDataSource;
    }

    boolean isEmbeddedPostgres() {
        return embeddedPostgres != null;
    }

    /** Whether relays connect as {@link #RELAY_ROLE}: their statements apart in {@code pg_stat_statements}. */
    boolean hasRelayRole() {
        return relayDataSource != dataSource;
    }

    /** The broker's process when it runs in its own JVM. */
    OptionalLong brokerPid() {
        return brokerProcess == null ? OptionalLong.empty() : OptionalLong.of(brokerProcess.pid());
    }

    String bootstrapServers() {
        return bootstrapServers;
    }

    CommonOptions options() {
        return options;
    }

    void createTopic(String name, Map<String, String> configs) {
        try {
            admin.createTopics(List.of(new NewTopic(name, options.partitions, (short) 1).configs(configs)))
                    .all().get();
            // wait until every partition has a leader
            long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
            while (System.nanoTime() < deadline) {
                try {
                    var d = admin.describeTopics(List.of(name)).allTopicNames().get().get(name);
                    if (d.partitions().size() == options.partitions
                            && d.partitions().stream().allMatch(pi -> pi.leader() != null && !pi.leader().isEmpty())) {
                        return;
                    }
                } catch (ExecutionException notYet) {
                    // metadata not propagated yet (UnknownTopicOrPartition): ask again
                }
                Thread.sleep(20);
            }
            throw new IllegalStateException("topic " + name + " has no leaders after 30 s");
        } catch (ExecutionException e) {
            throw new IllegalStateException("could not create topic " + name + ": " + e.getCause(), e.getCause());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", e);
        }
    }

    /** The sum of a consumer group's committed offsets over all its partitions (0 before its first commit). */
    long committedOffsets(String group) {
        try {
            long sum = 0;
            for (var offset : admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get().values()) {
                sum += offset == null ? 0 : offset.offset();
            }
            return sum;
        } catch (ExecutionException e) {
            throw new IllegalStateException("could not read the offsets of group " + group + ": " + e.getCause(),
                    e.getCause());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", e);
        }
    }

    void deleteTopic(String name) {
        try {
            admin.deleteTopics(List.of(name)).all().get();
        } catch (Exception e) {
            log.debug("could not delete topic {}: {}", name, e.toString());
        }
    }

    // ---- SQL helpers --------------------------------------------------------------------------------------------

    String walLsn() {
        return queryString("SELECT pg_current_wal_lsn()::text");
    }

    long walBytesBetween(String from, String to) {
        try (Connection c = dataSource.getConnection();
             PreparedStatement ps = c.prepareStatement("SELECT pg_wal_lsn_diff(?::pg_lsn, ?::pg_lsn)::bigint")) {
            ps.setString(1, to);
            ps.setString(2, from);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getLong(1);
            }
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }

    void execute(String... sql) {
        try (Connection c = dataSource.getConnection(); Statement st = c.createStatement()) {
            for (String s : sql) {
                st.execute(s);
            }
        } catch (SQLException e) {
            throw new IllegalStateException("SQL failed: " + String.join("; ", sql) + ": " + e.getMessage(), e);
        }
    }

    String queryString(String sql) {
        try (Connection c = dataSource.getConnection(); Statement st = c.createStatement();
             ResultSet rs = st.executeQuery(sql)) {
            rs.next();
            return rs.getString(1);
        } catch (SQLException e) {
            throw new IllegalStateException("SQL failed: " + sql + ": " + e.getMessage(), e);
        }
    }

    long queryLong(String sql) {
        return Long.parseLong(queryString(sql));
    }

    /** Machine and service facts for the report header. */
    List<String> describe() {
        List<String> lines = new ArrayList<>();
        lines.add("date: " + ZonedDateTime.now());
        lines.add("cpus (nproc): " + Runtime.getRuntime().availableProcessors());
        long mem = ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean())
                .getTotalMemorySize();
        lines.add("memory: " + (mem >> 20) + " MiB");
        lines.add("java: " + System.getProperty("java.vm.name") + " " + System.getProperty("java.version")
                + ", heap max " + (Runtime.getRuntime().maxMemory() >> 20) + " MiB");
        lines.add("load average at start / at report: " + startLoad + " / " + loadAverage()
                + " (other processes on the machine skew results)");
        StringBuilder pg = new StringBuilder();
        for (String name : List.of("fsync", "full_page_writes", "synchronous_commit", "shared_buffers",
                "shared_preload_libraries")) {
            pg.append(pg.length() == 0 ? "" : ", ").append(name).append('=').append(queryString("SHOW " + name));
        }
        lines.add("postgresql: " + queryString("SHOW server_version") + " ("
                + (embeddedPostgres != null ? "embedded" : options.jdbcUrl) + ": " + pg + ")");
        lines.add("kafka: clients " + AppInfoParser.getVersion()
                + (broker != null ? ", in-process single-node KRaft broker " + options.brokerProperties
                : brokerProcess != null ? ", single-node KRaft broker in its own JVM (pid " + brokerProcess.pid()
                + ", -Xmx1g, SerialGC) " + options.brokerProperties
                : ", broker " + bootstrapServers));
        return lines;
    }

    @Override
    public void close() {
        try {
            admin.close(Duration.ofSeconds(5));
        } finally {
            try {
                if (broker != null) {
                    broker.close();
                }
                if (brokerProcess != null) {
                    brokerProcess.close();
                }
            } finally {
                if (embeddedPostgres != null) {
                    embeddedPostgres.close();
                }
            }
        }
    }
}
