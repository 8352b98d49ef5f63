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
 *
 * <p>{@link Builder#secure()} adds a TLS listener ({@link #sslBootstrapServers()}) and a SASL_SSL listener with
 * SCRAM-SHA-512 ({@link #saslSslBootstrapServers()}, user {@link #scramUser()}), both with a certificate signed by a
 * CA made at start ({@link #tls()}); the PLAINTEXT listener stays, for the tests' own admin clients.
 */
public final class KafkaBroker implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(KafkaBroker.class);
    private static final int BIND_ATTEMPTS = 5;
    private static KafkaBroker shared;

    private final KafkaRaftServer server;
    private final Path dir;
    private final int port;
    private final boolean isShared;
    private final SecureListeners secure;
    private final AtomicBoolean closed = new AtomicBoolean();

    private KafkaBroker(KafkaRaftServer server, Path dir, int port, boolean isShared, SecureListeners secure) {
        this.server = server;
        this.dir = dir;
        this.port = port;
        this.isShared = isShared;
        this.secure = secure;
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

    /** {@code 127.0.0.1:<port>} of the TLS listener (security.protocol=SSL); {@link Builder#secure()} only. */
    public String sslBootstrapServers() {
        return "127.0.0.1:" + secure().sslPort();
    }

    /** {@code 127.0.0.1:<port>} of the SASL_SSL listener (SCRAM-SHA-512); {@link Builder#secure()} only. */
    public String saslSslBootstrapServers() {
        return "127.0.0.1:" + secure().saslSslPort();
    }

    /** The broker's CA, its truststore and an unrelated CA's truststore; {@link Builder#secure()} only. */
    public TlsMaterial tls() {
        return secure().tls();
    }

    /** The SCRAM-SHA-512 user created at start; {@link Builder#secure()} only. */
    public String scramUser() {
        return secure().user();
    }

    /** The SCRAM user's password. */
    public String scramPassword() {
        return secure().password();
    }

    private SecureListeners secure() {
        if (secure == null) {
            throw new IllegalStateException("this broker has no TLS or SASL listener: start it with "
                    + "KafkaBroker.builder().secure().start()");
        }
        return secure;
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
            if (secure != null) {
                BrokerSetup.deleteRecursively(secure.tlsDir());
            }
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

    private record SecureListeners(int sslPort, int saslSslPort, Path tlsDir, TlsMaterial tls, String user,
            String password) {
    }

    /** Broker settings; every Kafka broker property may be overridden. */
    public static final class Builder {
        private final Map<String, String> overrides = new LinkedHashMap<>();
        private boolean secure;
        private KafkaBroker cluster;
        private int nodeId;

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

        /**
         * Installs the {@link MarkerGate} as the broker's authorizer (it allows everything), so a test can hold the
         * transaction coordinator's marker writes: one broker per JVM, the gate being static.
         */
        public Builder markerGate() {
            return property("authorizer.class.name", MarkerGate.class.getName());
        }

        /**
         * Adds an SSL and a SASL_SSL (SCRAM-SHA-512) listener next to PLAINTEXT, with a CA and the broker's
         * certificate generated at start, and a SCRAM user created once the broker runs (about 5 s more than a plain
         * broker, mostly keytool).
         */
        public Builder secure() {
            this.secure = true;
            return this;
        }

        /**
         * Starts a second broker (broker role only, node id {@code nodeId}) in the cluster of {@code first}, whose
         * controller it registers with: for topics with a replication factor above 1, e.g. a partition whose ISR
         * falls below {@code min.insync.replicas} when this broker stops.
         */
        public Builder joining(KafkaBroker first, int nodeId) {
            if (nodeId < 2) {
                throw new IllegalArgumentException("kafkaBroker.joining: node id must be >= 2 (1 is the first "
                        + "broker's), was " + nodeId);
            }
            this.cluster = Objects.requireNonNull(first, "first");
            this.nodeId = nodeId;
            return this;
        }

        public KafkaBroker start() {
            if (!secure) {
                return startInternal(false);
            }
            Path tlsDir;
            try {
                tlsDir = Files.createTempDirectory("txoutbox-kafka-tls-");
            } catch (IOException e) {
                throw new UncheckedIOException("could not create a temp dir for the broker's TLS stores", e);
            }
            try {
                long begin = System.nanoTime();
                TlsMaterial tls = TlsMaterial.generate(tlsDir);
                log.info("KafkaBroker: CA, broker certificate and truststores made in {} ms ({})",
                        (System.nanoTime() - begin) / 1_000_000, tls);
                return startInternal(false, tls, tlsDir);
            } catch (RuntimeException e) {
                BrokerSetup.deleteRecursively(tlsDir);
                throw e;
            }
        }

        private KafkaBroker startInternal(boolean isShared) {
            return startInternal(isShared, null, null);
        }

        private KafkaBroker startInternal(boolean isShared, TlsMaterial tls, Path tlsDir) {
            RuntimeException last = null;
            for (int attempt = 1; attempt <= BIND_ATTEMPTS; attempt++) {
                long begin = System.nanoTime();
                int[] ports = FreePorts.take(tls == null ? 2 : 4);
                Path dir;
                try {
                    dir = Files.createTempDirectory("txoutbox-kafka-");
                } catch (IOException e) {
                    throw new UncheckedIOException("could not create a temp dir for Kafka", e);
                }
                KafkaRaftServer server = null;
                try {
                    Map<String, String> settings = overrides;
                    if (tls != null) {
                        settings = new LinkedHashMap<>(SecureSetup.brokerProperties(ports, tls));
                        settings.putAll(overrides);
                    }
                    Properties props = BrokerSetup.singleNode(ports[0], ports[1], dir.resolve("data"), settings);
                    String clusterId = null;
                    if (cluster != null) {
                        Properties first = BrokerSetup.read(cluster.dir.resolve("server.properties"));
                        props.setProperty("process.roles", "broker");
                        props.setProperty("node.id", Integer.toString(nodeId));
                        props.setProperty("controller.quorum.voters", first.getProperty("controller.quorum.voters"));
                        props.setProperty("listeners", "PLAINTEXT://127.0.0.1:" + ports[0]);
                        clusterId = BrokerSetup.read(cluster.logDir().resolve("meta.properties"))
                                .getProperty("cluster.id");
                    }
                    Path file = dir.resolve("server.properties");
                    BrokerSetup.write(props, file);
                    BrokerSetup.format(file, clusterId);
                    server = newServer(props);
                    server.startup();
                    BrokerSetup.awaitTransactionCoordinator("127.0.0.1:" + ports[0]);
                    log.info("KafkaBroker 127.0.0.1:{} started in {} ms (controller port {}, dir {}, overrides {})",
                            ports[0], (System.nanoTime() - begin) / 1_000_000, ports[1], dir, overrides);
                    SecureListeners secureListeners = null;
                    if (tls != null) {
                        String password = SecureSetup.createScramUser("127.0.0.1:" + ports[0],
                                SecureSetup.SCRAM_USER);
                        secureListeners = new SecureListeners(ports[2], ports[3], tlsDir, tls, SecureSetup.SCRAM_USER,
                                password);
                    }
                    return new KafkaBroker(server, dir, ports[0], isShared, secureListeners);
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
