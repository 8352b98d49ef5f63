package io.txoutbox.kafka.internal;

import static org.assertj.core.api.Assertions.assertThat;

import io.txoutbox.testing.kafka.KafkaBroker;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The probes against a real broker: what its plaintext listener answers, and the brokers it advertises. */
class ListenerProbeIT {

    @Test
    void a_plaintext_listener_answers_kafka_and_advertises_itself() {
        KafkaBroker kafka = KafkaBroker.shared();

        assertThat(ListenerProbe.probe(kafka.bootstrapServers(), 5_000))
                .isEqualTo(ListenerProbe.Answer.KAFKA_PLAINTEXT);
        assertThat(ListenerProbe.advertised(kafka.bootstrapServers(), 5_000)).as("Metadata v4, brokers only")
                .containsExactly(kafka.bootstrapServers());
        assertThat(new ConnectionTrouble("t", Map.of("bootstrap.servers", kafka.bootstrapServers())).beforeClient())
                .isNull();
    }

    @Test
    void a_tls_alert_is_not_read_as_a_metadata_answer() throws Exception {
        try (ServerSocket tls = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            Thread listener = FakeListener.serve(tls, 1, request -> FakeListener.TLS_ALERT);
            long begin = System.nanoTime();

            assertThat(ListenerProbe.advertised("127.0.0.1:" + tls.getLocalPort(), 5_000)).isEmpty();
            assertThat((System.nanoTime() - begin) / 1_000_000).as("ms: the alert's first bytes end it, no wait")
                    .isLessThan(4_000);
            listener.join(5_000);
        }
    }
}
