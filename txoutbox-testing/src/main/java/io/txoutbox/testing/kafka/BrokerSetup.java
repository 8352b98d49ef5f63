package io.txoutbox.testing.kafka;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.stream.Stream;
import kafka.tools.StorageTool;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.errors.TransactionalIdNotFoundException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** Configuration, storage formatting and topic creation shared by the in-process and the out-of-process broker. */
final class BrokerSetup {

    private static final Logger log = LoggerFactory.getLogger(BrokerSetup.class);
    static final Duration TOPIC_TIMEOUT = Duration.ofSeconds(30);

    private BrokerSetup() {
    }

    /** Single-node KRaft (broker + controller) properties; {@code overrides} win. */
    static Properties singleNode(int port, int controllerPort, Path dataDir, Map<String, String> overrides) {
        Properties p = new Properties();
        p.setProperty("process.roles", "broker,controller");
        p.setProperty("node.id", "1");
        p.setProperty("controller.quorum.voters", "1@127.0.0.1:" + controllerPort);
        p.setProperty("listeners", "PLAINTEXT://127.0.0.1:" + port + ",CONTROLLER://127.0.0.1:" + controllerPort);
        p.setProperty("advertised.listeners", "PLAINTEXT://127.0.0.1:" + port);
        p.setProperty("inter.broker.listener.name", "PLAINTEXT");
        p.setProperty("controller.listener.names", "CONTROLLER");
        p.setProperty("listener.security.protocol.map", "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT");
        p.setProperty("log.dirs", dataDir.toAbsolutePath().toString());
        p.setProperty("num.partitions", "1");
        p.setProperty("offsets.topic.replication.factor", "1");
        p.setProperty("offsets.topic.num.partitions", "5");
        p.setProperty("transaction.state.log.replication.factor", "1");
        p.setProperty("transaction.state.log.min.isr", "1");
        p.setProperty("transaction.state.log.num.partitions", "5");
        p.setProperty("share.coordinator.state.topic.replication.factor", "1");
        p.setProperty("share.coordinator.state.topic.min.isr", "1");
        p.setProperty("group.initial.rebalance.delay.ms", "0");
        p.putAll(overrides);
        return p;
    }

    /** Writes {@code props} to {@code file}. */
    static void write(Properties props, Path file) {
        try (OutputStream out = Files.newOutputStream(file)) {
            props.store(out, "txoutbox-testing single-node KRaft broker");
        } catch (IOException e) {
            throw new UncheckedIOException("could not write " + file, e);
        }
    }

    /** Reads a properties file (a broker's server.properties or meta.properties). */
    static Properties read(Path file) {
        Properties p = new Properties();
        try (java.io.InputStream in = Files.newInputStream(file)) {
            p.load(in);
        } catch (IOException e) {
            throw new UncheckedIOException("could not read " + file, e);
        }
        return p;
    }

    /** Formats the log dir of {@code propertiesFile} with a fresh cluster id (kafka-storage.sh format). */
    static void format(Path propertiesFile) {
        format(propertiesFile, null);
    }

    /** Formats the log dir of {@code propertiesFile} with {@code clusterId}, or a fresh one when null. */
    static void format(Path propertiesFile, String existingClusterId) {
        String clusterId = existingClusterId != null ? existingClusterId : Uuid.randomUuid().toString();
        ByteArrayOutputStream buffer = new ByteArrayOutputStream();
        int rc;
        try (PrintStream out = new PrintStream(buffer, true, StandardCharsets.UTF_8)) {
            rc = StorageTool.execute(new String[] {"format", "-t", clusterId, "-c", propertiesFile.toString()}, out);
        } catch (Exception e) {
            throw new IllegalStateException("kafka storage format failed for " + propertiesFile + ": " + e
                    + "; output: " + buffer.toString(StandardCharsets.UTF_8), e);
        }
        if (rc != 0) {
            throw new IllegalStateException("kafka storage format exited " + rc + " for " + propertiesFile
                    + ": " + buffer.toString(StandardCharsets.UTF_8));
        }
        log.debug("formatted {} with cluster id {}", propertiesFile, clusterId);
    }

    /**
     * Creates a topic (an existing one with that name is accepted) and waits until every partition has a leader,
     * so a producer's first send does not race the metadata.
     */
    static void createTopic(String bootstrapServers, String name, int partitions, Map<String, String> configs) {
        if (partitions < 1) {
            throw new IllegalArgumentException("partitions must be >= 1, was " + partitions + " for topic " + name);
        }
        try (Admin admin = admin(bootstrapServers)) {
            try {
                admin.createTopics(List.of(new NewTopic(name, partitions, (short) 1).configs(configs)))
                        .all().get(TOPIC_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
            } catch (ExecutionException e) {
                if (!(e.getCause() instanceof TopicExistsException)) {
                    throw new IllegalStateException("could not create topic " + name + " on " + bootstrapServers, e.getCause());
                }
            }
            long deadline = System.nanoTime() + TOPIC_TIMEOUT.toNanos();
            while (true) {
                try {
                    TopicDescription d = admin.describeTopics(List.of(name)).allTopicNames()
                            .get(5, TimeUnit.SECONDS).get(name);
                    if (d.partitions().size() == partitions && d.partitions().stream().allMatch(p -> p.leader() != null)
                            && servesEveryPartition(admin, name, partitions)) {
                        return;
                    }
                } catch (ExecutionException | TimeoutException e) {
                    log.debug("topic {} not described yet: {}", name, e.toString());
                }
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException("topic " + name + " has no leader for all " + partitions
                            + " partitions after " + TOPIC_TIMEOUT);
                }
                java.util.concurrent.locks.LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(50));
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while creating topic " + name, e);
        } catch (TimeoutException e) {
            throw new IllegalStateException("creating topic " + name + " timed out after " + TOPIC_TIMEOUT, e);
        }
    }

    /**
     * True once the leader answers a ListOffsets for every partition. A leader in the metadata is not enough: a
     * produce request that reaches the broker before it has applied the partition's creation fails with
     * NOT_LEADER_OR_FOLLOWER, and if a later request of the same idempotent producer lands first, the earlier one
     * retries with OUT_OF_ORDER_SEQUENCE until its delivery timeout (KAFKA-14359 / KAFKA-15591; seen in CI on a
     * starved machine). Tests start producing right after {@code createTopic}, so it returns only when the partitions
     * are served.
     */
    private static boolean servesEveryPartition(Admin admin, String name, int partitions) throws InterruptedException {
        Map<org.apache.kafka.common.TopicPartition, org.apache.kafka.clients.admin.OffsetSpec> latest =
                new java.util.HashMap<>();
        for (int p = 0; p < partitions; p++) {
            latest.put(new org.apache.kafka.common.TopicPartition(name, p),
                    org.apache.kafka.clients.admin.OffsetSpec.latest());
        }
        try {
            admin.listOffsets(latest).all().get(5, TimeUnit.SECONDS);
            return true;
        } catch (ExecutionException | TimeoutException e) {
            log.debug("topic {} not served on every partition yet: {}", name, e.toString());
            return false;
        }
    }

    /**
     * Has the broker create its transaction state topic, as the first transactional client of a cluster does
     * (FindCoordinator), and waits until the coordinator answers. A cluster in use has that topic; a freshly formatted
     * one makes the first {@code initTransactions} wait while it is created and loaded (4 s on a loaded 2-core
     * machine), which would make a test, or the README's job, measure the fresh cluster instead of the relay.
     */
    static void awaitTransactionCoordinator(String bootstrapServers) {
        long begin = System.nanoTime();
        long deadline = begin + TOPIC_TIMEOUT.toNanos();
        try (Admin admin = admin(bootstrapServers)) {
            while (true) {
                try {
                    admin.describeTransactions(List.of("txoutbox-testing-warm-up")).all()
                            .get(10, TimeUnit.SECONDS);
                    break;
                } catch (ExecutionException e) {
                    if (e.getCause() instanceof TransactionalIdNotFoundException) {
                        break; // the coordinator answered: the topic is there and loaded
                    }
                    log.debug("transaction coordinator not ready yet: {}", e.getCause().toString());
                } catch (TimeoutException e) {
                    log.debug("transaction coordinator not ready yet: {}", e.toString());
                }
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException("the transaction coordinator of " + bootstrapServers
                            + " did not answer within " + TOPIC_TIMEOUT);
                }
                java.util.concurrent.locks.LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(50));
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while waiting for the transaction coordinator", e);
        }
        log.debug("transaction coordinator of {} ready in {} ms", bootstrapServers,
                (System.nanoTime() - begin) / 1_000_000);
    }

    static Admin admin(String bootstrapServers) {
        Properties p = new Properties();
        p.setProperty(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers);
        p.setProperty(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "5000");
        p.setProperty(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "10000");
        return Admin.create(p);
    }

    static void deleteRecursively(Path dir) {
        if (dir == null || !Files.exists(dir)) {
            return;
        }
        try (Stream<Path> paths = Files.walk(dir)) {
            paths.sorted(Comparator.reverseOrder()).forEach(p -> {
                try {
                    Files.deleteIfExists(p);
                } catch (IOException e) {
                    log.warn("could not delete {}", p, e);
                }
            });
        } catch (IOException e) {
            log.warn("could not delete {}", dir, e);
        }
    }
}
