package io.txoutbox.testing.history;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.io.Writer;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.List;
import java.util.Properties;
import java.util.stream.Stream;
import kafka.server.KafkaConfig;
import kafka.server.KafkaRaftServer;
import kafka.tools.StorageTool;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.utils.Time;

/**
 * A single-node KRaft broker in this JVM on free ports, for this package's tests only (the shared harness has its
 * own).
 */
final class TestKafkaBroker implements AutoCloseable {

    static {
        // the broker logs thousands of INFO lines; keep this package's test output readable (slf4j-simple)
        for (String logger : new String[] {"kafka", "org.apache.kafka", "state.change.logger"}) {
            System.setProperty("org.slf4j.simpleLogger.log." + logger, "warn");
        }
    }

    private final Path logDir;
    private final KafkaRaftServer server;
    private final String bootstrapServers;

    TestKafkaBroker() throws Exception {
        logDir = Files.createTempDirectory("txoutbox-history-kafka");
        int port = freePort();
        int controllerPort = freePort();
        Properties props = new Properties();
        props.put("process.roles", "broker,controller");
        props.put("node.id", "1");
        props.put("controller.quorum.voters", "1@127.0.0.1:" + controllerPort);
        props.put("listeners", "PLAINTEXT://127.0.0.1:" + port + ",CONTROLLER://127.0.0.1:" + controllerPort);
        props.put("advertised.listeners", "PLAINTEXT://127.0.0.1:" + port);
        props.put("inter.broker.listener.name", "PLAINTEXT");
        props.put("controller.listener.names", "CONTROLLER");
        props.put("listener.security.protocol.map", "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT");
        props.put("log.dirs", logDir.resolve("data").toString());
        props.put("offsets.topic.replication.factor", "1");
        props.put("offsets.topic.num.partitions", "1");
        props.put("transaction.state.log.replication.factor", "1");
        props.put("transaction.state.log.min.isr", "1");
        props.put("transaction.state.log.num.partitions", "1");
        props.put("share.coordinator.state.topic.replication.factor", "1");
        props.put("share.coordinator.state.topic.min.isr", "1");
        props.put("group.initial.rebalance.delay.ms", "0");
        props.put("auto.create.topics.enable", "false");
        Path config = logDir.resolve("server.properties");
        try (Writer writer = Files.newBufferedWriter(config)) {
            props.store(writer, null);
        }
        ByteArrayOutputStream formatOutput = new ByteArrayOutputStream();
        int formatted = StorageTool.execute(new String[] {"format", "-t", Uuid.randomUuid().toString(),
                "-c", config.toString()}, new PrintStream(formatOutput, true, StandardCharsets.UTF_8));
        if (formatted != 0) {
            throw new IllegalStateException("formatting the Kafka log dir failed: " + formatOutput);
        }
        server = new KafkaRaftServer(KafkaConfig.fromProps(props, false), Time.SYSTEM);
        server.startup();
        bootstrapServers = "127.0.0.1:" + port;
    }

    String bootstrapServers() {
        return bootstrapServers;
    }

    void createTopic(String topic, int partitions) throws Exception {
        try (Admin admin = Admin.create(java.util.Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers))) {
            admin.createTopics(List.of(new NewTopic(topic, partitions, (short) 1))).all().get();
        }
    }

    @Override
    public void close() {
        try {
            server.shutdown();
            server.awaitShutdown();
        } finally {
            deleteRecursively(logDir);
        }
    }

    private static int freePort() throws IOException {
        try (ServerSocket socket = new ServerSocket(0)) {
            return socket.getLocalPort();
        }
    }

    private static void deleteRecursively(Path dir) {
        try (Stream<Path> paths = Files.walk(dir)) {
            paths.sorted(Comparator.reverseOrder()).forEach(path -> path.toFile().delete());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
