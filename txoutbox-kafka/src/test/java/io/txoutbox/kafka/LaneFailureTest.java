package io.txoutbox.kafka;

import static org.assertj.core.api.Assertions.assertThat;

import io.txoutbox.spi.OutboxRecord;
import io.txoutbox.spi.SendResult;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.apache.kafka.clients.producer.MockProducer;
import org.apache.kafka.common.errors.InvalidProducerEpochException;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.Test;

/** Transaction outcomes a real broker produces only rarely, driven through Kafka's MockProducer. */
class LaneFailureTest {

    private final List<MockProducer<byte[], byte[]>> producers = new CopyOnWriteArrayList<>();
    /** Producers made only to fence the lane's spare transactional id (initialised and closed at once). */
    private final List<MockProducer<byte[], byte[]>> spareFences = new CopyOnWriteArrayList<>();

    private KafkaTransport transport(Consumer<MockProducer<byte[], byte[]>> firstProducerSetup) {
        return KafkaTransport.builder().bootstrapServers("127.0.0.1:1").producerFactory(props -> {
            MockProducer<byte[], byte[]> p =
                    new MockProducer<>(true, null, new ByteArraySerializer(), new ByteArraySerializer());
            if (String.valueOf(props.get("transactional.id")).endsWith("-spare")) {
                spareFences.add(p);
                return p;
            }
            if (producers.isEmpty()) {
                firstProducerSetup.accept(p);
            }
            producers.add(p);
            return p;
        }).build();
    }

    private static List<OutboxRecord> batch() {
        return List.of(TestRecords.json("orders", "a", "{}"), TestRecords.json("orders", "b", "{}"),
                TestRecords.json("orders", "a", "{}"));
    }

    private static List<SendResult> send(KafkaTransport t) throws Exception {
        return t.send("0", batch()).toCompletableFuture().get(10, TimeUnit.SECONDS);
    }

    @Test
    void commitTimeoutReportsAllRetriableAndReplacesTheProducer() throws Exception {
        try (KafkaTransport t = transport(p -> p.commitTransactionException = new TimeoutException("commit slow"))) {
            assertThat(send(t)).hasSize(3).allSatisfy(r -> assertThat(r).isInstanceOfSatisfying(
                    SendResult.Failed.class, f -> assertThat(f.kind()).isEqualTo(SendResult.Kind.UNAVAILABLE)));
            assertThat(producers.get(0).closed()).as("timed-out producer closed").isTrue();
            assertThat(producers.get(0).transactionAborted()).as("no abort after a commit timeout").isFalse();

            assertThat(send(t)).allMatch(SendResult::isDelivered);
            assertThat(producers).hasSize(2);
            assertThat(producers.get(1).transactionCommitted()).isTrue();
            assertThat(spareFences).as("each new producer of the lane fences the lane's spare id").hasSize(2)
                    .allMatch(MockProducer::closed);
        }
    }

    @Test
    void fencedCommitReportsRetriableFencedAndReplacesTheProducer() throws Exception {
        try (KafkaTransport t = transport(
                p -> p.commitTransactionException = new InvalidProducerEpochException("epoch bumped"))) {
            assertThat(send(t)).allSatisfy(r -> assertThat(r).isInstanceOfSatisfying(SendResult.Failed.class, f -> {
                assertThat(f.kind()).isEqualTo(SendResult.Kind.UNAVAILABLE);
                assertThat(f.cause()).hasMessageContaining("fenced");
            }));
            assertThat(producers.get(0).closed()).isTrue();
            assertThat(send(t)).allMatch(SendResult::isDelivered);
        }
    }

    @Test
    void failedAbortReportsRetriableAndReplacesTheProducer() throws Exception {
        try (KafkaTransport t = transport(p -> {
            p.sendException = new org.apache.kafka.common.KafkaException("broken");
            p.abortTransactionException = new TimeoutException("abort slow");
        })) {
            assertThat(send(t)).allSatisfy(r -> assertThat(r).isInstanceOfSatisfying(SendResult.Failed.class,
                    f -> assertThat(f.kind()).isEqualTo(SendResult.Kind.UNAVAILABLE)));
            assertThat(producers.get(0).closed()).isTrue();
            assertThat(send(t)).allMatch(SendResult::isDelivered);
        }
    }

    @Test
    void deliveredResultsCarryPartitionAndOffset() throws Exception {
        try (KafkaTransport t = transport(p -> { })) {
            List<SendResult> results = send(t);
            assertThat(results).allSatisfy(r -> assertThat(r).isInstanceOfSatisfying(SendResult.Delivered.class,
                    d -> assertThat(d.offset()).isGreaterThanOrEqualTo(0)));
            assertThat(producers.get(0).history()).hasSize(3);
        }
    }
}
