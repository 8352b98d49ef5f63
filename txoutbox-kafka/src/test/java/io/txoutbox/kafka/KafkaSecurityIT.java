package io.txoutbox.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.txoutbox.Outbox;
import io.txoutbox.OutboxHealth;
import io.txoutbox.OutboxMessage;
import io.txoutbox.OutboxSchema;
import io.txoutbox.PollingRelay;
import io.txoutbox.RelayConfig;
import io.txoutbox.testing.kafka.KafkaBroker;
import io.txoutbox.testing.logging.CapturedStderr;
import io.txoutbox.testing.postgres.PostgresExtension;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.sql.Connection;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.management.MBeanServer;
import javax.management.MBeanServerDelegate;
import javax.management.MBeanServerNotification;
import javax.management.NotificationListener;
import javax.management.ObjectName;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * TLS and SASL/SCRAM through {@link KafkaTransport.Builder#properties} and {@link KafkaInboxConsumer.Builder}'s
 * properties, against a broker with an SSL and a SASL_SSL (SCRAM-SHA-512) listener whose certificate is signed by a CA
 * made at start. The right settings deliver (relay → broker → inbox); a wrong CA, a wrong password and plaintext
 * against a TLS port each fail with a message that names the problem and the fix, logged once per streak and kept in
 * the events' {@code last_error}, while the events stay pending with no attempt counted and the consumer commits no
 * offset. The SCRAM password and the store password appear in no log line, exception, {@code toString()} or health
 * result.
 */
class KafkaSecurityIT {

    @RegisterExtension
    static final PostgresExtension postgres = new PostgresExtension();
    private static final Duration AWAIT = Duration.ofSeconds(30);
    /**
     * For the clear message to reach every event's last_error: each lane's producer must first fail its own tries.
     * In the CI run of 6cf6dbf (2026-12-04 17:07, beside txoutbox-test-its's two test JVMs, the broker's controller
     * reporting 2.4 s events) the relay took 12 s to start, and its lanes failed their first batches 37-40 s after
     * it started: the message was in every last_error a few seconds past the 30 s this wait had then.
     */
    private static final Duration AWAIT_MESSAGE = Duration.ofSeconds(90);
    private static final String SCRAM = "org.apache.kafka.common.security.scram.ScramLoginModule required "
            + "username=\"%s\" password=\"%s\";";

    private static KafkaBroker kafka;
    private static OutboxSchema schema;
    private CapturedStderr logs;

    @BeforeAll
    static void startBroker() {
        kafka = KafkaBroker.builder().secure().start();
        schema = OutboxSchema.builder().schema(postgres.database().schema()).build();
        schema.migrate(postgres.database().dataSource());
    }

    @AfterAll
    static void stopBroker() {
        if (kafka != null) {
            kafka.close();
        }
    }

    @BeforeEach
    void captureLogs() {
        logs = CapturedStderr.start();
    }

    @AfterEach
    void noSecretInTheLogs() {
        logs.close();
        assertNoSecret(logs.text());
    }

    // ---- client settings, as in docs/kafka.md ----------------------------------------------------------------

    /** TLS: the listener's CA in a truststore. */
    private static Map<String, Object> tls(String truststore) {
        Map<String, Object> p = new LinkedHashMap<>();
        p.put("security.protocol", "SSL");
        p.put("ssl.truststore.location", truststore);
        p.put("ssl.truststore.password", kafka.tls().storePassword());
        p.put("ssl.truststore.type", "PKCS12");
        return p;
    }

    /** SASL/SCRAM over TLS. */
    private static Map<String, Object> scram(String password) {
        Map<String, Object> p = tls(kafka.tls().truststore().toString());
        p.put("security.protocol", "SASL_SSL");
        p.put("sasl.mechanism", "SCRAM-SHA-512");
        p.put("sasl.jaas.config", String.format(SCRAM, kafka.scramUser(), password));
        return p;
    }

    // ---- the right settings ----------------------------------------------------------------------------------

    @Test
    void the_right_credentials_relay_over_scram_and_the_inbox_consumers_receive_over_tls_and_scram() throws Exception {
        String topic = "secure-" + UUID.randomUUID();
        kafka.createTopic(topic, 3);
        int events = 40;
        KafkaTransport transport = KafkaTransport.builder().bootstrapServers(kafka.saslSslBootstrapServers())
                .properties(scram(kafka.scramPassword())).build();
        try (PollingRelay relay = relay(transport, "scram-ok")) {
            publish(topic, events);
            relay.nudge();
            await().atMost(AWAIT).until(() -> pending(topic) == 0);
            assertThat(published(topic)).isEqualTo(events);
            assertNoSecret(transport.toString());
            assertNoSecret(relay.toString());
            assertNoSecret(String.valueOf(OutboxHealth.builder().dataSource(postgres.database().dataSource())
                    .schema(schema).relay(relay).build().check()));
        }
        String overTls = "tls-" + UUID.randomUUID();
        String overScram = "scram-" + UUID.randomUUID();
        try (KafkaInboxConsumer viaTls = inbox(overTls, topic, kafka.sslBootstrapServers(),
                tls(kafka.tls().truststore().toString()));
                KafkaInboxConsumer viaScram = inbox(overScram, topic, kafka.saslSslBootstrapServers(),
                        scram(kafka.scramPassword()))) {
            await().atMost(AWAIT).until(() -> received(overTls) == events && received(overScram) == events);
            assertThat(viaTls.stats().loopErrors()).isZero();
            assertThat(viaScram.stats().loopErrors()).isZero();
            assertNoSecret(viaTls.toString() + viaScram.toString() + viaScram.stats());
        }
    }

    // ---- the wrong settings ----------------------------------------------------------------------------------

    @Test
    void a_wrong_ca_is_named_with_the_truststore_to_fix_and_nothing_is_lost() throws Exception {
        String wrong = kafka.tls().wrongTruststore().toString();
        String expected = "TLS handshake with broker " + kafka.sslBootstrapServers() + " failed: the broker's "
                + "certificate is not trusted by ssl.truststore.location=" + wrong + "; set the truststore that holds "
                + "the broker's CA";
        failsClearly(kafka.sslBootstrapServers(), tls(wrong), KafkaTransport.Mode.TRANSACTIONAL, expected);
    }

    @Test
    void a_wrong_password_is_named_with_the_user_and_the_setting_to_fix_in_both_modes_and_nothing_is_lost()
            throws Exception {
        String expected = "SASL authentication failed for user '" + kafka.scramUser() + "' (SCRAM-SHA-512) at broker "
                + kafka.saslSslBootstrapServers() + ": wrong password or unknown user (check sasl.jaas.config)";
        failsClearly(kafka.saslSslBootstrapServers(), scram("not-" + kafka.scramPassword().substring(3)),
                KafkaTransport.Mode.TRANSACTIONAL, expected);
        failsClearly(kafka.saslSslBootstrapServers(), scram("not-" + kafka.scramPassword().substring(3)),
                KafkaTransport.Mode.IDEMPOTENT, expected);
    }

    @Test
    void plaintext_against_the_tls_port_makes_no_kafka_client_and_asks_whether_security_protocol_is_right()
            throws Exception {
        String expected = "is security.protocol right for this listener? the client sends unencrypted requests "
                + "(security.protocol=PLAINTEXT) and the listener answers with a TLS alert";
        String clientId = "plain-at-tls-" + UUID.randomUUID().toString().substring(0, 8);
        Map<String, Object> plaintext = new LinkedHashMap<>();
        plaintext.put("client.id", clientId); // the relay's producers are <client.id>-<lane>, the consumer's is it
        plaintext.put("max.block.ms", "1000"); // a plaintext client only sees disconnects: each try waits this long
        plaintext.put("request.timeout.ms", "1000");
        plaintext.put("delivery.timeout.ms", "2500");
        // Each connection attempt of a plaintext client here allocates ~336 MB (the TLS alert read as a response
        // size, KAFKA-4090), which is why no client may be made; should one be made all the same, it tries at most
        // every 2-5 s, not Kafka's 50 ms-1 s, so this JVM (and the broker in it) is not frozen meanwhile
        plaintext.put("reconnect.backoff.ms", "2000");
        plaintext.put("reconnect.backoff.max.ms", "5000");
        try (KafkaClientsMade made = KafkaClientsMade.watch(clientId)) {
            failsClearly(kafka.sslBootstrapServers(), plaintext, KafkaTransport.Mode.TRANSACTIONAL, expected);
            assertThat(made.names()).as("Kafka clients made with security.protocol=PLAINTEXT at a TLS listener: "
                    + "each connection attempt of one allocates ~336 MB (KAFKA-4090)").isEmpty();
        }
    }

    /**
     * The address the clients are given answers TLS at first, then — the operator fixed it — the plaintext listener:
     * the relay and the inbox consumer make their clients within seconds and deliver, without a restart (the listener
     * is asked again every 5 s while it refuses).
     */
    @Test
    void once_the_listener_answers_kafka_the_clients_are_made_and_deliver_without_a_restart() throws Exception {
        String topic = "fixed-" + UUID.randomUUID();
        kafka.createTopic(topic, 1);
        String group = "fixed-" + UUID.randomUUID();
        int logsBefore = count(logs.text(), "connected to the broker again");
        try (Forward address = new Forward(port(kafka.sslBootstrapServers()))) {
            KafkaTransport transport = KafkaTransport.builder().bootstrapServers(address.address()).build();
            try (PollingRelay relay = relay(transport, "fixed", 2);
                    KafkaInboxConsumer consumer = inbox(group, topic, address.address(), Map.of())) {
                publish(topic, 5);
                relay.nudge();
                await().atMost(AWAIT_MESSAGE).until(() -> count(lastErrors(topic), " speaks TLS: ") == 5);
                assertThat(received(group)).isZero();
                address.target(port(kafka.bootstrapServers())); // the plaintext listener from now on
                await().atMost(AWAIT).until(() -> published(topic) == 5 && received(group) == 5);
                await().atMost(AWAIT).until(() -> count(logs.text(), "connected to the broker again")
                        >= logsBefore + 2);
                assertThat(relay.stats().parked()).isZero();
            }
        }
    }

    private static int port(String hostPort) {
        return Integer.parseInt(hostPort.substring(hostPort.lastIndexOf(':') + 1));
    }

    /**
     * A TCP forwarder on a free local port to a local port that can be changed: connections made after {@link
     * #target} go to the new port, as after an operator fixed a DNS name or a load balancer.
     */
    private static final class Forward implements AutoCloseable {

        private final ServerSocket server;
        private final ExecutorService threads = Executors.newCachedThreadPool(r -> {
            Thread t = new Thread(r, "test-forward");
            t.setDaemon(true);
            return t;
        });
        private final List<Socket> sockets = new CopyOnWriteArrayList<>();
        private volatile int targetPort;

        Forward(int targetPort) throws IOException {
            this.targetPort = targetPort;
            this.server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
            threads.submit(this::accept);
        }

        String address() {
            return "127.0.0.1:" + server.getLocalPort();
        }

        void target(int port) {
            targetPort = port;
        }

        private void accept() {
            while (!server.isClosed()) {
                try {
                    Socket in = server.accept();
                    Socket out = new Socket(InetAddress.getLoopbackAddress(), targetPort);
                    sockets.add(in);
                    sockets.add(out);
                    threads.submit(() -> pump(in, out));
                    threads.submit(() -> pump(out, in));
                } catch (IOException e) {
                    // closed, or the target refused: the client sees the connection end
                }
            }
        }

        private static void pump(Socket from, Socket to) {
            try {
                from.getInputStream().transferTo(to.getOutputStream());
            } catch (IOException e) {
                // either side closed
            } finally {
                closeQuietly(from);
                closeQuietly(to);
            }
        }

        private static void closeQuietly(Socket s) {
            try {
                s.close();
            } catch (IOException ignored) {
                // already closed
            }
        }

        @Override
        public void close() throws IOException {
            server.close();
            sockets.forEach(Forward::closeQuietly);
            threads.shutdownNow();
        }
    }

    /**
     * The Kafka producers, consumers and admin clients made while it watches whose client.id starts with a prefix:
     * every client registers its {@code type=app-info} MBean when it is made.
     */
    private static final class KafkaClientsMade implements AutoCloseable {

        private final MBeanServer server = ManagementFactory.getPlatformMBeanServer();
        private final List<String> names = new CopyOnWriteArrayList<>();
        private final NotificationListener listener;

        private KafkaClientsMade(String clientIdPrefix) throws Exception {
            listener = (notification, handback) -> {
                if (notification instanceof MBeanServerNotification n
                        && MBeanServerNotification.REGISTRATION_NOTIFICATION.equals(n.getType())
                        && isClient(n.getMBeanName(), clientIdPrefix)) {
                    names.add(n.getMBeanName().toString());
                }
            };
            server.addNotificationListener(MBeanServerDelegate.DELEGATE_NAME, listener, null, null);
            for (ObjectName existing : server.queryNames(null, null)) {
                if (isClient(existing, clientIdPrefix)) {
                    names.add(existing.toString());
                }
            }
        }

        static KafkaClientsMade watch(String clientIdPrefix) throws Exception {
            return new KafkaClientsMade(clientIdPrefix);
        }

        private static boolean isClient(ObjectName name, String clientIdPrefix) {
            String id = name.getKeyProperty("id");
            return name.getDomain().startsWith("kafka.") && "app-info".equals(name.getKeyProperty("type"))
                    && id != null && id.startsWith(clientIdPrefix);
        }

        List<String> names() {
            return List.copyOf(names);
        }

        @Override
        public void close() throws Exception {
            server.removeNotificationListener(MBeanServerDelegate.DELEGATE_NAME, listener);
        }
    }

    @Test
    void closing_the_inbox_consumer_does_not_wait_out_its_error_backoff() {
        String topic = "denied-" + UUID.randomUUID();
        kafka.createTopic(topic, 1);
        KafkaInboxConsumer consumer = inbox("denied-" + UUID.randomUUID(), topic, kafka.saslSslBootstrapServers(),
                scram("not-" + kafka.scramPassword().substring(3)));
        try {
            // backoff after the n-th failed poll: 100, 200, 400, 800, 1600, 3200 ms: the sixth one is long
            await().atMost(AWAIT).until(() -> consumer.stats().loopErrors() >= 6);
        } finally {
            long begin = System.nanoTime();
            consumer.close();
            long closeMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - begin);
            assertThat(closeMs).as("close() while the loop backs off for 3.2 s").isLessThan(1_500);
        }
    }

    /**
     * A relay with these client settings and an inbox consumer with the same ones, side by side: the message appears
     * in the events' last_error and once in the log per component (however many batches and polls failed); the
     * events stay PENDING with no attempt; the consumer stores nothing and its group has no committed offset.
     */
    private void failsClearly(String bootstrap, Map<String, Object> settings, KafkaTransport.Mode mode,
            String expected) throws Exception {
        String topic = "denied-" + UUID.randomUUID();
        kafka.createTopic(topic, 1);
        String group = "denied-" + UUID.randomUUID();
        int logsBefore = count(logs.text(), expected);
        KafkaTransport transport = KafkaTransport.builder().bootstrapServers(bootstrap).mode(mode)
                .properties(settings).build();
        long start = System.nanoTime();
        // two lanes (not the default four): the message must still be logged once for all lanes, and a plaintext
        // client at the TLS port costs ~336 MB per producer per attempt (KAFKA-4090)
        try (PollingRelay relay = relay(transport, "denied", 2);
                KafkaInboxConsumer consumer = inbox(group, topic, bootstrap, settings)) {
            publish(topic, 5);
            relay.nudge();
            try {
                await().atMost(AWAIT_MESSAGE).until(() -> count(lastErrors(topic), expected) == 5);
            } catch (org.awaitility.core.ConditionTimeoutException e) {
                throw new AssertionError("the events' last_error does not say '" + expected + "':\n"
                        + lastErrors(topic), e);
            }
            // more failed batches and polls meanwhile: the message must not repeat per batch or per poll
            await().atMost(AWAIT).until(() -> relay.stats().batches() >= 3
                    && count(logs.text(), expected) >= logsBefore + 2);
            long seconds = TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - start);
            assertThat(count(logs.text(), expected) - logsBefore)
                    .as("the message logged once by the relay's transport and once by the inbox consumer, after %d"
                            + " batches in %d s; log:%n%s", relay.stats().batches(), seconds, logs.text())
                    .isEqualTo(2);
            assertThat(pending(topic)).as("events stay pending").isEqualTo(5);
            assertThat(postgres.database().queryLong("SELECT coalesce(sum(attempts), 0) FROM "
                    + schema.qualifiedOutboxTable() + " WHERE topic = '" + topic + "'"))
                    .as("no attempt counted: it is the connection, not the events").isZero();
            assertThat(relay.stats().parked()).isZero();
            assertThat(received(group)).isZero();
            assertThat(committedOffsets(group)).as("no offset committed").isEmpty();
            assertNoSecret(transport.toString());
            assertNoSecret(relay.toString());
            assertNoSecret(lastErrors(topic));
        } finally {
            postgres.database().execute("DELETE FROM " + schema.qualifiedOutboxTable() + " WHERE topic = '" + topic
                    + "'");
        }
    }

    // ---- helpers ---------------------------------------------------------------------------------------------

    private static PollingRelay relay(KafkaTransport transport, String name) {
        return relay(transport, name, RelayConfig.DEFAULT_LANES);
    }

    private static PollingRelay relay(KafkaTransport transport, String name, int lanes) {
        return PollingRelay.builder().dataSource(postgres.database().dataSource()).schema(schema).transport(transport)
                .name(name + "-" + UUID.randomUUID().toString().substring(0, 6)).pollInterval(Duration.ofMillis(50))
                .lanes(lanes).outageBackoffMax(Duration.ofMillis(500)).build().start();
    }

    private static KafkaInboxConsumer inbox(String group, String topic, String bootstrap,
            Map<String, Object> settings) {
        return KafkaInboxConsumer.builder().bootstrapServers(bootstrap).properties(settings).groupId(group)
                .topics(topic).dataSource(postgres.database().dataSource()).schema(schema).storeInInbox()
                .pollTimeout(Duration.ofMillis(200)).build().start();
    }

    private static void publish(String topic, int events) throws Exception {
        Outbox outbox = Outbox.builder().schema(schema).build();
        try (Connection c = postgres.database().dataSource().getConnection()) {
            c.setAutoCommit(false);
            for (int i = 0; i < events; i++) {
                // keys of their own: events of another test left pending must not hold these back
                outbox.publish(c, OutboxMessage.builder().topic(topic).aggregate("Order", topic + "-" + (i % 7))
                        .eventType("Placed").jsonPayload("{\"n\":" + i + "}").build());
            }
            c.commit();
        }
    }

    private static String lastErrors(String topic) throws Exception {
        StringBuilder errors = new StringBuilder();
        try (Connection c = postgres.database().connect(); var st = c.createStatement();
                var rs = st.executeQuery("SELECT last_error FROM " + schema.qualifiedOutboxTable()
                        + " WHERE topic = '" + topic + "'")) {
            while (rs.next()) {
                errors.append(rs.getString(1)).append('\n');
            }
        }
        return errors.toString();
    }

    private static long pending(String topic) {
        return postgres.database().queryLong("SELECT count(*) FROM " + schema.qualifiedOutboxTable()
                + " WHERE topic = '" + topic + "' AND state = 'PENDING'");
    }

    private static long published(String topic) {
        return postgres.database().queryLong("SELECT count(*) FROM " + schema.qualifiedOutboxTable()
                + " WHERE topic = '" + topic + "' AND state = 'PUBLISHED'");
    }

    private static long received(String consumer) {
        return postgres.database().queryLong("SELECT count(*) FROM " + "\"" + postgres.database().schema() + "\".inbox_event"
                + " WHERE consumer = '" + consumer + "'");
    }

    private static Map<TopicPartition, OffsetAndMetadata> committedOffsets(String group) throws Exception {
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers()))) {
            return admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get(10, TimeUnit.SECONDS);
        }
    }

    private static void assertNoSecret(String text) {
        assertThat(text).doesNotContain(kafka.scramPassword());
        assertThat(text).doesNotContain(kafka.scramPassword().substring(3)); // the wrong password's tail
        assertThat(text).doesNotContain(kafka.tls().storePassword());
    }

    private static int count(String text, String needle) {
        Matcher m = Pattern.compile(Pattern.quote(needle)).matcher(text);
        int n = 0;
        while (m.find()) {
            n++;
        }
        return n;
    }
}
