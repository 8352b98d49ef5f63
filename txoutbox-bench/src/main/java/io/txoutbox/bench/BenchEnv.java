package io.txoutbox.bench;

import io.txoutbox.testing.kafka.KafkaBroker;
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
import java.util.Map;
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
    private final PGSimpleDataSource dataSource;
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

    BenchEnv(CommonOptions options) {
        this.options = options;
        if (options.jdbcUrl == null) {
            embeddedPostgres = TestPostgres.startEmbedded();
            dataSource = embeddedPostgres.dataSource();
        } else {
            embeddedPostgres = null;
            dataSource = new PGSimpleDataSource();
            dataSource.setURL(options.jdbcUrl);
            dataSource.setUser(options.jdbcUser);
            dataSource.setPassword(options.jdbcPassword);
        }
        if (options.bootstrapServers == null) {
            KafkaBroker.Builder b = KafkaBroker.builder();
            options.brokerProperties.forEach(b::property);
            broker = b.start();
            bootstrapServers = broker.bootstrapServers();
        } else {
            broker = null;
            bootstrapServers = options.bootstrapServers;
        }
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers);
        admin = Admin.create(p);
    }

    PGSimpleDataSource dataSource() {
        return dataSource;
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
        lines.add("postgresql: " + queryString("SHOW server_version")
                + (embeddedPostgres != null ? " (embedded: fsync=off, full_page_writes=off, synchronous_commit=on, "
                + "shared_buffers=256MB)" : " (" + options.jdbcUrl + ", fsync=" + queryString("SHOW fsync") + ")"));
        lines.add("kafka: clients " + AppInfoParser.getVersion()
                + (broker != null ? ", in-process single-node KRaft broker " + options.brokerProperties
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
            } finally {
                if (embeddedPostgres != null) {
                    embeddedPostgres.close();
                }
            }
        }
    }
}
