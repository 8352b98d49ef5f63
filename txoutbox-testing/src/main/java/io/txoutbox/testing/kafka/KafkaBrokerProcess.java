package io.txoutbox.testing.kafka;

import io.txoutbox.testing.net.FreePorts;
import io.txoutbox.testing.process.JvmProcess;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.kafka.clients.admin.Admin;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A real single-node Kafka broker (KRaft) in its own JVM, for tests that must SIGKILL, SIGTERM, pause or restart the
 * broker under load. A restart reuses the same ports and the same log dir, so topics and records survive and clients
 * can reconnect to the same {@link #bootstrapServers()}. The broker's output goes to {@link #logFile()}, not to the
 * test's stdout. {@link #close()} kills it and deletes the directory.
 *
 * <pre>{@code
 * try (KafkaBrokerProcess kafka = KafkaBrokerProcess.builder().start()) {
 *     kafka.createTopic("orders", 3);
 *     kafka.kill();       // SIGKILL
 *     kafka.restart();    // same ports, same data
 * }
 * }</pre>
 *
 * <p>{@link Builder#secure()} adds the listeners of {@link KafkaBroker.Builder#secure()}: TLS
 * ({@link #sslBootstrapServers()}) and SASL_SSL with SCRAM-SHA-512 ({@link #saslSslBootstrapServers()}, user
 * {@link #scramUser()}), with a certificate signed by a CA made at the first start ({@link #tls()}); the PLAINTEXT
 * listener stays, for the tests' own admin clients. A restart keeps the ports, the stores and the user.
 */
public final class KafkaBrokerProcess implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(KafkaBrokerProcess.class);
    private static final String STARTED = "Kafka Server started";
    private static final int BIND_ATTEMPTS = 5;

    private final Map<String, String> overrides;
    private final List<String> jvmArgs;
    private final Duration startTimeout;
    private final boolean secure;
    private final Path dir;
    private final AtomicBoolean closed = new AtomicBoolean();
    private boolean formatted;
    private int port;
    private int controllerPort;
    private int sslPort;
    private int saslSslPort;
    private TlsMaterial tls;
    private String scramPassword;
    private JvmProcess process;
    private int starts;

    private KafkaBrokerProcess(Builder builder) {
        Map<String, String> merged = new LinkedHashMap<>();
        // After a SIGKILL the restarted controller refuses the broker's new registration
        // (DUPLICATE_BROKER_REGISTRATION) until the old session expires: 9 s by default, 3 s here.
        merged.put("broker.heartbeat.interval.ms", "500");
        merged.put("broker.session.timeout.ms", "3000");
        merged.putAll(builder.overrides);
        this.overrides = Map.copyOf(merged);
        this.jvmArgs = List.copyOf(builder.jvmArgs);
        this.startTimeout = builder.startTimeout;
        this.secure = builder.secure;
        try {
            this.dir = Files.createTempDirectory("txoutbox-kafka-process-");
        } catch (IOException e) {
            throw new UncheckedIOException("could not create a temp dir for the Kafka process", e);
        }
    }

    public static Builder builder() {
        return new Builder();
    }

    /**
     * Starts the broker and waits until it serves requests. The first start takes free ports and formats the log
     * dir; later starts reuse both. Fails if it is already running.
     */
    public synchronized KafkaBrokerProcess start() {
        if (closed.get()) {
            throw new IllegalStateException("KafkaBrokerProcess is closed");
        }
        if (process != null && process.isAlive()) {
            throw new IllegalStateException("KafkaBrokerProcess " + bootstrapServers() + " is already running");
        }
        if (process != null) {
            process.close();
            process = null;
        }
        boolean firstStart = !formatted;
        if (firstStart && secure && tls == null) {
            long begin = System.nanoTime();
            tls = TlsMaterial.generate(dir.resolve("tls"));
            log.info("KafkaBrokerProcess: CA, broker certificate and truststores made in {} ms ({})",
                    (System.nanoTime() - begin) / 1_000_000, tls);
        }
        for (int attempt = 1; ; attempt++) {
            if (firstStart) {
                int[] ports = FreePorts.take(secure ? 4 : 2);
                port = ports[0];
                controllerPort = ports[1];
                Map<String, String> settings = overrides;
                if (secure) {
                    sslPort = ports[2];
                    saslSslPort = ports[3];
                    settings = new LinkedHashMap<>(SecureSetup.brokerProperties(ports, tls));
                    settings.putAll(overrides);
                }
                BrokerSetup.write(BrokerSetup.singleNode(port, controllerPort, logDir(), settings), propertiesFile());
                if (!formatted) {
                    // the format records cluster and node ids, not ports, so a port retry needs no new format
                    BrokerSetup.format(propertiesFile());
                    formatted = true;
                }
            }
            long begin = System.nanoTime();
            starts++;
            JvmProcess started = JvmProcess.builder("kafka.Kafka")
                    .name("kafka-" + port)
                    .jvmArgs(jvmArgs.toArray(String[]::new))
                    .args(propertiesFile().toString())
                    .logFile(logFile())
                    .maxLines(20_000)
                    .start();
            try {
                awaitReady(started);
                if (firstStart) {
                    BrokerSetup.awaitTransactionCoordinator(bootstrapServers());
                    if (secure) {
                        // kept in the cluster's metadata log: a restart keeps the user and its password
                        scramPassword = SecureSetup.createScramUser(bootstrapServers(), SecureSetup.SCRAM_USER);
                    }
                }
                process = started;
                log.info("KafkaBrokerProcess {} ready in {} ms (pid {}, start #{}, dir {})", bootstrapServers(),
                        (System.nanoTime() - begin) / 1_000_000, started.pid(), starts, dir);
                return this;
            } catch (RuntimeException e) {
                boolean bindFailure = started.lines().stream().anyMatch(l -> l.contains("Address already in use")
                        || l.contains("BindException"));
                started.close();
                if (firstStart && bindFailure && attempt < BIND_ATTEMPTS) {
                    log.info("KafkaBrokerProcess: ports {}/{} taken meanwhile, retrying ({}/{})", port, controllerPort,
                            attempt, BIND_ATTEMPTS);
                    continue;
                }
                if (bindFailure) {
                    throw new IllegalStateException("KafkaBrokerProcess could not bind 127.0.0.1:" + port + "/"
                            + controllerPort + " (another process took it?): " + e.getMessage(), e);
                }
                throw e;
            }
        }
    }

    /** SIGKILL: the broker dies without flushing or deregistering, as in a crash. Waits until it is gone. */
    public synchronized void kill() {
        requireProcess().kill();
    }

    /** SIGTERM and wait for a clean shutdown (SIGKILL if it takes more than 30 s). */
    public synchronized void stop() {
        JvmProcess p = requireProcess();
        p.terminate();
        try {
            p.awaitExit(Duration.ofSeconds(30));
        } catch (IllegalStateException e) {
            log.warn("KafkaBrokerProcess {} ignored SIGTERM for 30 s, killing it", bootstrapServers());
            p.kill();
        }
    }

    /** SIGSTOP: the broker hangs with its connections open (resume with {@link #resume()}). */
    public synchronized void pause() {
        requireProcess().pause();
    }

    /** SIGCONT after {@link #pause()}. */
    public synchronized void resume() {
        requireProcess().resume();
    }

    /** Stops the broker if it runs (SIGTERM), then starts it on the same ports with the same data. */
    public synchronized KafkaBrokerProcess restart() {
        if (process != null && process.isAlive()) {
            stop();
        }
        return start();
    }

    public synchronized boolean isRunning() {
        return process != null && process.isAlive();
    }

    /** The pid of the current broker JVM. */
    public synchronized long pid() {
        return requireProcess().pid();
    }

    /** {@code 127.0.0.1:<port>}; the same across restarts. */
    public synchronized String bootstrapServers() {
        if (port == 0) {
            throw new IllegalStateException("KafkaBrokerProcess has not been started yet");
        }
        return "127.0.0.1:" + port;
    }

    public synchronized int port() {
        return port;
    }

    /** {@code 127.0.0.1:<port>} of the TLS listener (security.protocol=SSL); {@link Builder#secure()} only. */
    public synchronized String sslBootstrapServers() {
        requireSecure();
        return "127.0.0.1:" + sslPort;
    }

    /** {@code 127.0.0.1:<port>} of the SASL_SSL listener (SCRAM-SHA-512); {@link Builder#secure()} only. */
    public synchronized String saslSslBootstrapServers() {
        requireSecure();
        return "127.0.0.1:" + saslSslPort;
    }

    /** The broker's CA, its truststore and an unrelated CA's truststore; {@link Builder#secure()} only. */
    public synchronized TlsMaterial tls() {
        requireSecure();
        return tls;
    }

    /** The SCRAM-SHA-512 user created at the first start; {@link Builder#secure()} only. */
    public synchronized String scramUser() {
        requireSecure();
        return SecureSetup.SCRAM_USER;
    }

    /** The SCRAM user's password. */
    public synchronized String scramPassword() {
        requireSecure();
        return scramPassword;
    }

    /** Kafka's data directory (log.dirs). */
    public Path logDir() {
        return dir.resolve("data");
    }

    /** The broker JVM's stdout and stderr, all starts appended. */
    public Path logFile() {
        return dir.resolve("broker.log");
    }

    /** Creates a topic with replication factor 1 (an existing one is accepted) and waits for its leaders. */
    public void createTopic(String name, int partitions) {
        createTopic(name, partitions, Map.of());
    }

    public void createTopic(String name, int partitions, Map<String, String> configs) {
        BrokerSetup.createTopic(bootstrapServers(), name, partitions, configs);
    }

    /** Kills the broker if it runs and deletes its directory (data and log). Idempotent. */
    @Override
    public synchronized void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        try {
            if (process != null) {
                process.close();
            }
        } finally {
            BrokerSetup.deleteRecursively(dir);
        }
    }

    @Override
    public String toString() {
        return "KafkaBrokerProcess 127.0.0.1:" + port;
    }

    private Path propertiesFile() {
        return dir.resolve("server.properties");
    }

    private void requireSecure() {
        if (!secure) {
            throw new IllegalStateException("this broker has no TLS or SASL listener: build it with "
                    + "KafkaBrokerProcess.builder().secure()");
        }
        if (scramPassword == null) {
            throw new IllegalStateException("KafkaBrokerProcess has not been started yet");
        }
    }

    private JvmProcess requireProcess() {
        if (process == null) {
            throw new IllegalStateException("KafkaBrokerProcess has not been started");
        }
        return process;
    }

    /** Ready when the broker logs that it started, or (if its logging is off) answers a metadata request. */
    private void awaitReady(JvmProcess p) {
        long deadline = System.nanoTime() + startTimeout.toNanos();
        long nextMetadataCheck = System.nanoTime() + TimeUnit.SECONDS.toNanos(3);
        while (true) {
            try {
                p.awaitLine(l -> l.contains(STARTED), Duration.ofMillis(250));
                return;
            } catch (IllegalStateException notYet) {
                if (!p.isAlive()) {
                    throw new IllegalStateException("Kafka broker JVM exited with " + p.exitCode() + " during start;"
                            + " log " + logFile() + ", last lines:\n" + p.tail(40), notYet);
                }
            }
            if (System.nanoTime() > nextMetadataCheck) {
                if (portAccepts() && answersMetadata()) {
                    return;
                }
                nextMetadataCheck = System.nanoTime() + TimeUnit.SECONDS.toNanos(2);
            }
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("Kafka broker 127.0.0.1:" + port + " not ready after " + startTimeout
                        + "; log " + logFile() + ", last lines:\n" + p.tail(40));
            }
        }
    }

    private boolean portAccepts() {
        try (Socket socket = new Socket()) {
            socket.connect(new InetSocketAddress("127.0.0.1", port), 500);
            return true;
        } catch (IOException e) {
            return false;
        }
    }

    private boolean answersMetadata() {
        try (Admin admin = BrokerSetup.admin("127.0.0.1:" + port)) {
            return !admin.describeCluster().nodes().get(2, TimeUnit.SECONDS).isEmpty();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while waiting for the Kafka broker", e);
        } catch (Exception e) {
            return false;
        }
    }

    /** Broker settings and JVM options. */
    public static final class Builder {
        private final Map<String, String> overrides = new LinkedHashMap<>();
        private final List<String> jvmArgs = new ArrayList<>(List.of("-Xmx512m", "-XX:+UseSerialGC",
                // C1 only: on a 2-core machine it cuts start-up by about a third; throughput hardly matters here
                "-XX:TieredStopAtLevel=1",
                // the readiness line, whatever log levels the test classpath's simplelogger.properties sets
                "-Dorg.slf4j.simpleLogger.log.kafka.server.KafkaRaftServer=info",
                "-Dorg.slf4j.simpleLogger.showDateTime=true",
                "-Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS"));
        private Duration startTimeout = Duration.ofMinutes(3); // generous: shared 2-core machines
        private boolean secure;

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
                throw new IllegalArgumentException("kafkaBrokerProcess.numPartitions must be >= 1, was " + partitions);
            }
            return property("num.partitions", Integer.toString(partitions));
        }

        /**
         * Adds an SSL and a SASL_SSL (SCRAM-SHA-512) listener next to PLAINTEXT, as
         * {@link KafkaBroker.Builder#secure()} does: a CA and the broker's certificate generated before the first
         * start, a SCRAM user created once the broker runs.
         */
        public Builder secure() {
            this.secure = true;
            return this;
        }

        /** Extra options of the broker JVM (defaults: {@code -Xmx512m -XX:+UseSerialGC -XX:TieredStopAtLevel=1}). */
        public Builder jvmArgs(String... args) {
            jvmArgs.addAll(List.of(args));
            return this;
        }

        public Builder startTimeout(Duration timeout) {
            if (timeout.isNegative() || timeout.isZero()) {
                throw new IllegalArgumentException("kafkaBrokerProcess.startTimeout must be > 0, was " + timeout);
            }
            this.startTimeout = timeout;
            return this;
        }

        /** A broker not started yet: call {@link KafkaBrokerProcess#start()}. */
        public KafkaBrokerProcess build() {
            return new KafkaBrokerProcess(this);
        }

        /** Builds and starts the broker, waiting until it is ready. */
        public KafkaBrokerProcess start() {
            KafkaBrokerProcess broker = build();
            try {
                return broker.start();
            } catch (RuntimeException e) {
                broker.close();
                throw e;
            }
        }
    }
}
