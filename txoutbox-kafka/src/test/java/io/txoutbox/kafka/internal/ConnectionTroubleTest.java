package io.txoutbox.kafka.internal;

import static org.assertj.core.api.Assertions.assertThat;

import io.txoutbox.OutboxException;
import io.txoutbox.spi.SendResult;
import io.txoutbox.testing.logging.CapturedStderr;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.security.cert.CertPathBuilderException;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import javax.net.ssl.SSLHandshakeException;
import org.apache.kafka.common.config.types.Password;
import org.apache.kafka.common.errors.SaslAuthenticationException;
import org.apache.kafka.common.errors.SslAuthenticationException;
import org.apache.kafka.common.errors.TimeoutException;
import org.junit.jupiter.api.Test;

class ConnectionTroubleTest {

    private static final String SECRET = "s3cr3t-Pa55";
    private static final Map<String, Object> SCRAM = Map.of("bootstrap.servers", "kafka-1:9094,kafka-2:9094",
            "security.protocol", "SASL_SSL", "sasl.mechanism", "SCRAM-SHA-512",
            "sasl.jaas.config", new Password("org.apache.kafka.common.security.scram.ScramLoginModule required "
                    + "username=\"billing\" password=\"" + SECRET + "\";"),
            "ssl.truststore.location", "/etc/kafka/ca.p12", "ssl.truststore.password", SECRET);

    private static SslAuthenticationException untrusted() {
        SSLHandshakeException handshake = new SSLHandshakeException("PKIX path building failed");
        handshake.initCause(new CertPathBuilderException("unable to find valid certification path to requested "
                + "target"));
        return new SslAuthenticationException("SSL handshake failed", handshake);
    }

    private static SaslAuthenticationException refused() {
        return new SaslAuthenticationException("Authentication failed during authentication due to invalid "
                + "credentials with SASL mechanism SCRAM-SHA-512");
    }

    @Test
    void an_untrusted_certificate_names_the_truststore_and_the_fix() {
        String m = new ConnectionTrouble("t", SCRAM).explain(new OutboxException("lane 0: could not start", untrusted()));
        assertThat(m).startsWith("TLS handshake with broker kafka-1:9094,kafka-2:9094 failed: the broker's "
                + "certificate is not trusted by ssl.truststore.location=/etc/kafka/ca.p12; set the truststore that "
                + "holds the broker's CA").doesNotContain(SECRET);
        assertThat(new ConnectionTrouble("t", Map.of("bootstrap.servers", "k:1", "security.protocol", "SSL"))
                .explain(untrusted())).contains("not trusted by the JVM's default truststore (ssl.truststore.location"
                        + " is not set)");
    }

    @Test
    void a_refused_password_names_the_user_and_the_setting_but_never_the_password() {
        String m = new ConnectionTrouble("t", SCRAM).explain(refused());
        assertThat(m).startsWith("SASL authentication failed for user 'billing' (SCRAM-SHA-512) at broker "
                + "kafka-1:9094,kafka-2:9094: wrong password or unknown user (check sasl.jaas.config)")
                .doesNotContain(SECRET);
        Map<String, Object> asString = new java.util.HashMap<>(SCRAM);
        asString.put("sasl.jaas.config", ((Password) SCRAM.get("sasl.jaas.config")).value());
        assertThat(new ConnectionTrouble("t", asString).explain(refused())).contains("user 'billing'")
                .doesNotContain(SECRET);
    }

    @Test
    void a_timeout_is_explained_only_when_the_listener_speaks_another_protocol_and_asked_once_per_streak() {
        AtomicInteger probes = new AtomicInteger();
        Map<String, Object> plaintext = Map.of("bootstrap.servers", "k:9093");
        ConnectionTrouble atTls = new ConnectionTrouble("t", plaintext, (server, timeout) -> {
            probes.incrementAndGet();
            return ListenerProbe.Answer.TLS_ALERT;
        });
        TimeoutException timeout = new TimeoutException("Timeout expired after 1000ms while awaiting InitProducerId");
        for (int i = 0; i < 3; i++) {
            assertThat(atTls.explain(timeout)).startsWith("the broker k:9093 closed the connection during the "
                    + "handshake: is security.protocol right for this listener? the client sends unencrypted "
                    + "requests (security.protocol=PLAINTEXT) and the listener answers with a TLS alert");
        }
        assertThat(probes).hasValue(1);
        atTls.connected();
        atTls.explain(timeout);
        assertThat(probes).as("a new streak asks again").hasValue(2);

        ConnectionTrouble tlsAtPlain = new ConnectionTrouble("t", Map.of("bootstrap.servers", "k:9092",
                "security.protocol", "SSL"), (server, timeout2) -> ListenerProbe.Answer.KAFKA_PLAINTEXT);
        assertThat(tlsAtPlain.explain(timeout)).contains("the client starts TLS (security.protocol=SSL) and the "
                + "listener answers unencrypted Kafka requests");
        ConnectionTrouble down = new ConnectionTrouble("t", plaintext, (s, t) -> ListenerProbe.Answer.UNREACHABLE);
        assertThat(down.explain(timeout)).as("a broker that is down is no protocol question").isNull();
        ConnectionTrouble right = new ConnectionTrouble("t", plaintext, (s, t) -> ListenerProbe.Answer.KAFKA_PLAINTEXT);
        assertThat(right.explain(timeout)).isNull();
        assertThat(right.explain(new IllegalStateException("other"))).isNull();
    }

    /**
     * Regression: a probe that got no answer in time (a loaded broker) settled the streak's question for good, so a
     * relay pointed at the TLS port never said why (KafkaSecurityIT's plaintext case failed that way in a CI run at
     * 85 % CPU, its events' last_error a send timeout). An inconclusive answer is asked again, at most every
     * {@code REPROBE_AFTER}.
     */
    @Test
    void an_inconclusive_probe_is_asked_again_later_in_the_streak() {
        Map<String, Object> plaintext = Map.of("bootstrap.servers", "k:9093");
        java.util.Deque<ListenerProbe.Answer> answers = new java.util.ArrayDeque<>(List.of(
                ListenerProbe.Answer.UNKNOWN, ListenerProbe.Answer.UNREACHABLE, ListenerProbe.Answer.TLS_ALERT));
        AtomicInteger probes = new AtomicInteger();
        long[] now = {0};
        ConnectionTrouble trouble = new ConnectionTrouble("t", plaintext, (server, timeout) -> {
            probes.incrementAndGet();
            return answers.poll();
        }, () -> now[0]);
        TimeoutException timeout = new TimeoutException("Timeout expired after 1000ms while awaiting InitProducerId");
        assertThat(trouble.explain(timeout)).as("no answer in time").isNull();
        now[0] += java.time.Duration.ofSeconds(1).toNanos();
        assertThat(trouble.explain(timeout)).as("too soon to ask again").isNull();
        assertThat(probes).hasValue(1);
        now[0] += ConnectionTrouble.REPROBE_AFTER.toNanos();
        assertThat(trouble.explain(timeout)).as("unreachable: no protocol question yet").isNull();
        now[0] += ConnectionTrouble.REPROBE_AFTER.toNanos();
        assertThat(trouble.explain(timeout)).contains("closed the connection during the handshake");
        now[0] += ConnectionTrouble.REPROBE_AFTER.toNanos();
        assertThat(trouble.explain(timeout)).contains("closed the connection during the handshake");
        assertThat(probes).as("a conclusive answer holds for the streak").hasValue(3);
    }

    /**
     * No Kafka client is made with an unencrypted security.protocol while a bootstrap listener answers TLS: each
     * connection attempt of one would allocate ~336 MB (KAFKA-4090). The answer stands for {@code REPROBE_AFTER};
     * only a TLS answer refuses, and a TLS client is never held back.
     */
    @Test
    void no_client_is_made_while_a_listener_answers_tls_to_an_unencrypted_protocol() {
        java.util.Deque<ListenerProbe.Answer> answers = new java.util.ArrayDeque<>(List.of(
                ListenerProbe.Answer.KAFKA_PLAINTEXT, ListenerProbe.Answer.TLS_ALERT, // k-1 fine, k-2 TLS: refused
                ListenerProbe.Answer.KAFKA_PLAINTEXT, ListenerProbe.Answer.KAFKA_PLAINTEXT, // both fixed
                ListenerProbe.Answer.UNKNOWN, ListenerProbe.Answer.UNREACHABLE)); // no answer, no connection
        List<String> asked = new java.util.ArrayList<>();
        long[] now = {0};
        ConnectionTrouble trouble = new ConnectionTrouble("t", Map.of("bootstrap.servers", "k-1:9092, k-2:9093",
                "security.protocol", "SASL_PLAINTEXT"), (server, timeout) -> {
                    asked.add(server);
                    return answers.poll();
                }, () -> now[0]);
        String refusal = trouble.beforeClient();
        assertThat(refusal).isEqualTo("the broker k-2:9093 speaks TLS: is security.protocol right for this listener? "
                + "the client sends unencrypted requests (security.protocol=SASL_PLAINTEXT) and the listener answers "
                + "with a TLS alert, as a TLS listener does: set security.protocol=SSL (or SASL_SSL) and "
                + "ssl.truststore.location, or use the broker's plaintext port. No Kafka client is made until the "
                + "listener answers Kafka requests (asked every 5 s): each connection attempt of one would allocate "
                + "~336 MB (KAFKA-4090)");
        now[0] += ConnectionTrouble.REPROBE_AFTER.toNanos() - 1;
        assertThat(trouble.beforeClient()).as("the answer stands").isEqualTo(refusal);
        assertThat(asked).containsExactly("k-1:9092", "k-2:9093");
        now[0] += 1;
        assertThat(trouble.beforeClient()).as("asked again: both answer Kafka").isNull();
        now[0] += ConnectionTrouble.REPROBE_AFTER.toNanos();
        assertThat(trouble.beforeClient()).as("no answer and no connection are no reason to hold a client back")
                .isNull();
        assertThat(asked).hasSize(6);

        ConnectionTrouble tls = new ConnectionTrouble("t", Map.of("bootstrap.servers", "k:9093",
                "security.protocol", "SSL"), (server, timeout) -> {
                    throw new AssertionError("a TLS client is not probed");
                });
        assertThat(tls.beforeClient()).isNull();
        ConnectionTrouble closed = new ConnectionTrouble("t", Map.of("bootstrap.servers", "k:9093"),
                (server, timeout) -> ListenerProbe.Answer.CLOSED);
        assertThat(closed.beforeClient()).as("a closed connection allocates nothing: the client reports it").isNull();
    }

    /**
     * A TLS listener slow to answer — a loaded broker, a CI machine — must still keep the unencrypted client from
     * being made: with the explaining probe's 1 s the answer came too late, read as "no answer", and the client
     * that allocates ~336 MB per connection attempt was made. Before a client, the listener gets 5 s to answer.
     */
    @Test
    void a_tls_listener_slow_to_answer_still_keeps_the_client_from_being_made() throws Exception {
        try (ServerSocket server = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            Thread listener = new Thread(() -> {
                try (Socket s = server.accept()) {
                    s.getInputStream().readNBytes(14);
                    Thread.sleep(1_500);
                    s.getOutputStream().write(FakeListener.TLS_ALERT);
                    s.getOutputStream().flush();
                } catch (IOException | InterruptedException ignored) {
                    // the probe gave up first
                }
            });
            listener.start();
            ConnectionTrouble trouble = new ConnectionTrouble("t", Map.of("bootstrap.servers",
                    "127.0.0.1:" + server.getLocalPort()));
            assertThat(trouble.beforeClient()).as("TLS alert after 1.5 s").startsWith("the broker 127.0.0.1:"
                    + server.getLocalPort() + " speaks TLS");
            listener.join(5_000);
        }
    }

    /**
     * The client connects next to the brokers its bootstrap listener advertises: a TLS port advertised for a plaintext
     * listener (a misconfigured advertised.listeners, a port mapping in front of the broker) is KAFKA-4090 as well.
     */
    @Test
    void no_client_is_made_while_a_broker_the_listener_advertises_answers_tls() {
        List<String> asked = new java.util.ArrayList<>();
        Map<String, ListenerProbe.Answer> answers = Map.of("k-1:9092", ListenerProbe.Answer.KAFKA_PLAINTEXT,
                "b-1:9092", ListenerProbe.Answer.KAFKA_PLAINTEXT, "b-2:9093", ListenerProbe.Answer.TLS_ALERT);
        List<String> advertisedAsked = new java.util.ArrayList<>();
        ConnectionTrouble trouble = new ConnectionTrouble("t", Map.of("bootstrap.servers", "k-1:9092"),
                (server, timeout) -> {
                    asked.add(server);
                    return answers.get(server);
                }, (server, timeout) -> {
                    advertisedAsked.add(server);
                    return List.of("k-1:9092", "b-1:9092", "b-2:9093");
                }, System::nanoTime);

        assertThat(trouble.beforeClient()).isEqualTo("the broker b-2:9093, which the listener k-1:9092 advertises, "
                + "speaks TLS: the client bootstraps in plaintext (security.protocol=PLAINTEXT) and would connect "
                + "there next, where the answer is a TLS alert: the cluster's advertised.listeners names a TLS port "
                + "for this plaintext listener (or a port mapping in front of the broker leads to one); fix the "
                + "broker's advertised.listeners, or connect to a TLS listener with security.protocol=SSL. No Kafka "
                + "client is made until the listener answers Kafka requests (asked every 5 s): each connection "
                + "attempt of one would allocate ~336 MB (KAFKA-4090)");
        assertThat(advertisedAsked).containsExactly("k-1:9092");
        assertThat(asked).as("the bootstrap listener is not asked twice").containsExactly("k-1:9092", "b-1:9092",
                "b-2:9093");

        ConnectionTrouble sasl = new ConnectionTrouble("t", Map.of("bootstrap.servers", "k-1:9092",
                "security.protocol", "SASL_PLAINTEXT"), (server, timeout) -> answers.get(server),
                (server, timeout) -> {
                    throw new AssertionError("a SASL listener tells its brokers only after authentication");
                }, System::nanoTime);
        assertThat(sasl.beforeClient()).isNull();
        ConnectionTrouble silent = new ConnectionTrouble("t", Map.of("bootstrap.servers", "k-1:9092"),
                (server, timeout) -> answers.get(server), (server, timeout) -> List.of(), System::nanoTime);
        assertThat(silent.beforeClient()).as("no Metadata answer: nothing to hold the client back").isNull();
    }

    /** The same over the wire: a plaintext listener that advertises a TLS port, with the production probes. */
    @Test
    void a_listener_advertising_a_tls_port_is_found_over_the_wire() throws Exception {
        try (ServerSocket tlsPort = new ServerSocket(0, 5, InetAddress.getLoopbackAddress());
                ServerSocket listener = new ServerSocket(0, 5, InetAddress.getLoopbackAddress())) {
            Thread tls = FakeListener.serve(tlsPort, 1, request -> FakeListener.TLS_ALERT);
            Thread kafka = FakeListener.serve(listener, 2, request -> request.length == 14
                    ? new byte[] {0, 0, 0, 4, request[8], request[9], request[10], request[11]}
                    : metadataAnswer(request, "127.0.0.1", tlsPort.getLocalPort()));
            ConnectionTrouble trouble = new ConnectionTrouble("t", Map.of("bootstrap.servers",
                    "127.0.0.1:" + listener.getLocalPort()));

            assertThat(trouble.beforeClient()).startsWith("the broker 127.0.0.1:" + tlsPort.getLocalPort()
                    + ", which the listener 127.0.0.1:" + listener.getLocalPort() + " advertises, speaks TLS");
            kafka.join(5_000);
            tls.join(5_000);
        }
    }

    /** A Metadata v4 answer (correlation id of {@code request}) with one broker and no topic. */
    private static byte[] metadataAnswer(byte[] request, String host, int port) {
        byte[] h = host.getBytes(java.nio.charset.StandardCharsets.UTF_8);
        java.nio.ByteBuffer b = java.nio.ByteBuffer.allocate(4 + 4 + 4 + 4 + 4 + 2 + h.length + 4 + 2 + 2 + 4 + 4);
        b.putInt(b.capacity() - 4).put(request, 8, 4) // size, correlation id
                .putInt(0).putInt(1) // throttle, one broker
                .putInt(7).putShort((short) h.length).put(h).putInt(port).putShort((short) -1) // id, host, port, rack
                .putShort((short) -1).putInt(7).putInt(0); // cluster id, controller, no topic
        return b.array();
    }

    @Test
    void review_makes_refused_credentials_unavailable_and_logs_once_per_streak() {
        ConnectionTrouble trouble = new ConnectionTrouble("txoutbox-kafka", SCRAM);
        String text;
        try (CapturedStderr logs = CapturedStderr.start()) {
            for (int batch = 0; batch < 5; batch++) {
                List<SendResult> reviewed = trouble.review("lane-" + (batch % 2), List.of(
                        new SendResult.Failed(SendResult.Kind.RETRIABLE, refused()),
                        SendResult.collateral(new OutboxException("held back"))));
                assertThat(((SendResult.Failed) reviewed.get(0)).kind()).isEqualTo(SendResult.Kind.UNAVAILABLE);
                assertThat(((SendResult.Failed) reviewed.get(0)).cause().getMessage())
                        .startsWith("SASL authentication failed for user 'billing'");
                assertThat(((SendResult.Failed) reviewed.get(1)).kind()).isEqualTo(SendResult.Kind.COLLATERAL);
            }
            trouble.review("lane-0", List.of(SendResult.delivered()));
            trouble.review("lane-0", List.of(new SendResult.Failed(SendResult.Kind.UNAVAILABLE, refused())));
            text = logs.text();
        }
        assertThat(text.split("SASL authentication failed for user", -1)).as(text).hasSize(3); // two streaks
        assertThat(text).contains("connected to the broker again").doesNotContain(SECRET);
    }

    @Test
    void refused_credentials_are_unavailable_not_the_events_fault() {
        assertThat(Failures.kindOf(refused())).isEqualTo(SendResult.Kind.UNAVAILABLE);
        assertThat(Failures.kindOf(untrusted())).isEqualTo(SendResult.Kind.UNAVAILABLE);
    }

    @Test
    void the_probe_tells_a_tls_alert_a_closed_connection_and_a_kafka_answer_apart() throws Exception {
        assertThat(probeAgainst(in -> FakeListener.TLS_ALERT)).isEqualTo(ListenerProbe.Answer.TLS_ALERT);
        assertThat(probeAgainst(in -> new byte[0])).isEqualTo(ListenerProbe.Answer.CLOSED);
        assertThat(probeAgainst(request -> {
            // echo the correlation id (bytes 8-11 of the request) as a Kafka response would
            return new byte[] {0, 0, 0, 4, request[8], request[9], request[10], request[11]};
        })).isEqualTo(ListenerProbe.Answer.KAFKA_PLAINTEXT);
        int closedPort;
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            closedPort = s.getLocalPort();
        }
        assertThat(ListenerProbe.probe("127.0.0.1:" + closedPort, 500)).isEqualTo(ListenerProbe.Answer.UNREACHABLE);
    }

    private static ListenerProbe.Answer probeAgainst(FakeListener.Reply reply) throws Exception {
        try (ServerSocket server = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            Thread t = FakeListener.serve(server, 1, reply);
            ListenerProbe.Answer answer = ListenerProbe.probe("127.0.0.1:" + server.getLocalPort(), 2_000);
            t.join(5_000);
            return answer;
        }
    }
}
