package io.txoutbox.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.txoutbox.spi.OutboxRecord;
import io.txoutbox.spi.SendResult;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.common.errors.InvalidTopicException;
import org.junit.jupiter.api.Test;

/** Behaviour that needs no broker: pre-validation, lanes, close. */
class KafkaTransportTest {

    private final AtomicInteger producersMade = new AtomicInteger();

    private KafkaTransport transport() {
        return KafkaTransport.builder().bootstrapServers("127.0.0.1:1").closeTimeout(Duration.ofSeconds(2))
                .producerFactory(props -> {
                    producersMade.incrementAndGet();
                    throw new AssertionError("no producer expected");
                }).build();
    }

    @Test
    void unsendableRecordIsPermanentAndLaterRecordsOfItsKeyCollateralWithoutAProducer() throws Exception {
        List<OutboxRecord> batch = List.of(
                TestRecords.json("bad topic", "k1", "{}"),
                TestRecords.json("orders", "k1", "{}"),
                TestRecords.json("bad topic", null, "{}"),
                TestRecords.json("orders", "k1", "{}"));
        try (KafkaTransport t = transport()) {
            List<SendResult> results = t.send("0", batch).toCompletableFuture().get(10, TimeUnit.SECONDS);
            assertThat(results).hasSize(4);
            assertThat(results.get(0)).isInstanceOfSatisfying(SendResult.Failed.class, f -> {
                assertThat(f.kind()).isEqualTo(SendResult.Kind.PERMANENT);
                assertThat(f.cause()).isInstanceOf(InvalidTopicException.class)
                        .hasMessageContaining(batch.get(0).eventId().toString());
            });
            assertThat(results.get(1)).isInstanceOfSatisfying(SendResult.Failed.class, f -> {
                assertThat(f.kind()).isEqualTo(SendResult.Kind.COLLATERAL);
                assertThat(f.cause()).hasMessageContaining(batch.get(0).eventId().toString());
            });
            assertThat(((SendResult.Failed) results.get(2)).kind()).isEqualTo(SendResult.Kind.PERMANENT);
            assertThat(((SendResult.Failed) results.get(3)).kind()).isEqualTo(SendResult.Kind.COLLATERAL);
        }
        assertThat(producersMade).hasValue(0);
    }

    @Test
    void failingProducerCreationMakesTheBatchRetriableOnTheLaneThread() throws Exception {
        List<String> threads = new java.util.concurrent.CopyOnWriteArrayList<>();
        try (KafkaTransport t = KafkaTransport.builder().bootstrapServers("127.0.0.1:1")
                .producerFactory(props -> {
                    threads.add(Thread.currentThread().getName() + " " + props.get("transactional.id"));
                    throw new IllegalStateException("cannot connect");
                }).build()) {
            List<SendResult> results = t.send("shard-3", List.of(TestRecords.json("orders", "k", "{}")))
                    .toCompletableFuture().get(10, TimeUnit.SECONDS);
            assertThat(results).singleElement().isInstanceOfSatisfying(SendResult.Failed.class,
                    f -> assertThat(f.kind()).isEqualTo(SendResult.Kind.UNAVAILABLE));
        }
        assertThat(threads).containsExactly("txoutbox-kafka-shard-3 txoutbox-shard-3");
    }

    @Test
    void closeIsIdempotentAndSendAfterCloseFails() {
        KafkaTransport t = transport();
        t.close();
        t.close();
        assertThatThrownBy(() -> t.send("0", List.of(TestRecords.json("orders", "k", "{}")))
                .toCompletableFuture().get(1, TimeUnit.SECONDS))
                .isInstanceOf(ExecutionException.class).hasCauseInstanceOf(IllegalStateException.class);
    }

    @Test
    void emptyBatchCompletesEmpty() throws Exception {
        try (KafkaTransport t = transport()) {
            assertThat(t.send("0", List.of()).toCompletableFuture().get(1, TimeUnit.SECONDS)).isEmpty();
        }
    }
}
