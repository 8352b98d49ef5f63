package io.txoutbox.testing.kafka;

import io.txoutbox.testing.net.FreePorts;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicBoolean;
import kafka.server.KafkaConfig;
import kafka.server.KafkaRaftServer;
import org.apache.kafka.common.utils.Time;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A real single-node Kafka broker (KRaft, broker and controller in one) running inside the test JVM, on free ports,
 * with its log in a temp directory deleted on {@link #close()}. Tests need the real broker's semantics (acks,
 * idempotence, transactions, fencing) and there is no Docker here. Use {@link KafkaBrokerProcess} when a test must
 * kill or restart the broker.
 *
 * <pre>{@code
 * KafkaBroker kafka = KafkaBroker.shared();               // one per test JVM
 * kafka.createTopic("orders", 3);
 * props.put("bootstrap.servers", kafka.bootstrapServers());
 * }</pre>
 */
public final class KafkaBroker implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(KafkaBroker.class);
    private static final int BIND_ATTEMPTS = 5;
    private static KafkaBroker shared;

    private final KafkaRaftServer server;
    private final Path dir;
    private final int port;
    private final boolean isShared;
    private final AtomicBoolean closed = new AtomicBoolean();

    private KafkaBroker(KafkaRaftServer server, Path dir, int port, boolean isShared) {
        this.server = server;
        this.dir = dir;
        this.port = port;
        this.isShared = isShared;
    }

    /** Starts a broker with the defaults. */
    public static KafkaBroker start() {
        return builder().start();
    }

    public static Builder builder() {
        return new Builder();
    }

    /**
     * The broker shared by all tests of this JVM: started on first use, closed by a shutdown hook. Its
     * {@link #close()} does nothing, so a test may use it in try-with-resources without breaking the others.
     */
    public static synchronized KafkaBroker shared() {
        if (shared == null) {
            KafkaBroker broker = new Builder().startInternal(true);
            Thread hook = new Thread(broker::shutdownNow, "txoutbox-testing-kafka-shutdown");
            Runtime.getRuntime().addShutdownHook(hook);
            shared = broker;
        }
        return shared;
    }

    /** {@code 127.0.0.1:<port>} for {@code bootstrap.servers}. */
    public String bootstrapServers() {
        return "127.0.0.1:" + port;
    }

    public int port() {
        return port;
    }

    /** The broker's data directory. */
    public Path logDir() {
        return dir.resolve("data");
    }

    /** Creates a topic with replication factor 1 (an existing one is accepted) and waits for its leaders. */
    public void createTopic(String name, int partitions) {
        createTopic(name, partitions, Map.of());
    }

    /** Creates a topic with topic-level configs, e.g. {@code cleanup.policy=compact}. */
    public void createTopic(String name, int partitions, Map<String, String> configs) {
        BrokerSetup.createTopic(bootstrapServers(), name, partitions, configs);
    }

    /** Stops the broker and deletes its log dir. Idempotent; a no-op on the {@link #shared()} broker. */
    @Override
    public void close() {
        if (isShared) {
            log.debug("close() on the shared broker ignored: it is closed at JVM exit");
            return;
        }
        shutdownNow();
    }

    private void shutdownNow() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        long start = System.nanoTime();
        try {
            server.shutdown();
            server.awaitShutdown();
        } catch (RuntimeException e) {
            log.warn("KafkaBroker {}: shutdown failed", bootstrapServers(), e);
        } finally {
            BrokerSetup.deleteRecursively(dir);
        }
        log.info("KafkaBroker {} stopped in {} ms", bootstrapServers(), (System.nanoTime() - start) / 1_000_000);
    }

    @Override
    public String toString() {
        return "KafkaBroker " + bootstrapServers();
    }

    /**
     * {@code new KafkaRaftServer(KafkaConfig.fromProps(props, false), Time.SYSTEM)} by reflection: written
     * directly, javac needs KafkaConfig's superclass from kafka-server, which kafka_2.13 has only at runtime scope.
     */
    private static KafkaRaftServer newServer(Properties props) {
        try {
            Object config = KafkaConfig.class.getMethod("fromProps", Properties.class, boolean.class)
                    .invoke(null, props, false);
            return KafkaRaftServer.class.getConstructor(KafkaConfig.class, Time.class).newInstance(config, Time.SYSTEM);
        } catch (java.lang.reflect.InvocationTargetException e) {
            Throwable cause = e.getCause();
            if (cause instanceof RuntimeException re) {
                throw re;
            }
            throw new IllegalStateException("could not create the Kafka server", cause);
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("kafka_2.13 API changed: KafkaConfig.fromProps/KafkaRaftServer(...)", e);
        }
    }

    /** Broker settings; every Kafka broker property may be overridden. */
    public static final class Builder {
        private final Map<String, String> overrides = new LinkedHashMap<>();

        private Builder() {
        }

        /** Any broker property, e.g. {@code message.max.bytes} or {@code auto.create.topics.enable}. */
        public Builder property(String key, String value) {
            overrides.put(Objects.requireNonNull(key, "key"), Objects.requireNonNull(value, "value"));
            return this;
        }

        /** Default partition count of auto-created topics (default 1). */
        public Builder numPartitions(int partitions) {
            if (partitions < 1) {
                throw new IllegalArgumentException("kafkaBroker.numPartitions must be >= 1, was " + partitions);
            }
            return property("num.partitions", Integer.toString(partitions));
        }

        public KafkaBroker start() {
            return startInternal(false);
        }

        private KafkaBroker startInternal(boolean isShared) {
            RuntimeException last = null;
            for (int attempt = 1; attempt <= BIND_ATTEMPTS; attempt++) {
                long begin = System.nanoTime();
                int[] ports = FreePorts.take(2);
                Path dir;
                try {
                    dir = Files.createTempDirectory("txoutbox-kafka-");
                } catch (IOException e) {
                    throw new UncheckedIOException("could not create a temp dir for Kafka", e);
                }
                KafkaRaftServer server = null;
                try {
                    Properties props = BrokerSetup.singleNode(ports[0], ports[1], dir.resolve("data"), overrides);
                    Path file = dir.resolve("server.properties");
                    BrokerSetup.write(props, file);
                    BrokerSetup.format(file);
                    server = newServer(props);
                    server.startup();
                    BrokerSetup.awaitTransactionCoordinator("127.0.0.1:" + ports[0]);
                    log.info("KafkaBroker 127.0.0.1:{} started in {} ms (controller port {}, dir {}, overrides {})",
                            ports[0], (System.nanoTime() - begin) / 1_000_000, ports[1], dir, overrides);
                    return new KafkaBroker(server, dir, ports[0], isShared);
                } catch (RuntimeException e) {
                    if (server != null) {
                        try {
                            server.shutdown();
                            server.awaitShutdown();
                        } catch (RuntimeException suppressed) {
                            e.addSuppressed(suppressed);
                        }
                    }
                    BrokerSetup.deleteRecursively(dir);
                    if (!FreePorts.isBindFailure(e)) {
                        throw e;
                    }
                    log.info("KafkaBroker: ports {} taken meanwhile, retrying ({}/{})", ports, attempt, BIND_ATTEMPTS);
                    last = e;
                }
            }
            throw new IllegalStateException("KafkaBroker could not bind free ports after " + BIND_ATTEMPTS + " attempts",
                    last);
        }
    }
}
