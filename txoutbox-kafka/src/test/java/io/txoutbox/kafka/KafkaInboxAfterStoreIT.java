package io.txoutbox.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.txoutbox.OutboxSchema;
import io.txoutbox.testing.kafka.KafkaBroker;
import io.txoutbox.testing.postgres.PostgresExtension;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Properties;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The store-mode callback runs after the batch is committed: its failure must not make the batch count as undone. */
class KafkaInboxAfterStoreIT {

    @RegisterExtension
    static final PostgresExtension postgres = new PostgresExtension();
    private static final Duration AWAIT = Duration.ofMinutes(2);

    private static void produce(KafkaProducer<byte[], byte[]> producer, String topic, int from, int to)
            throws Exception {
        for (int i = from; i < to; i++) {
            ProducerRecord<byte[], byte[]> r = new ProducerRecord<>(topic, ("k" + i).getBytes(StandardCharsets.UTF_8),
                    "{}".getBytes(StandardCharsets.UTF_8));
            r.headers().add(KafkaHeaders.EVENT_ID, UUID.randomUUID().toString().getBytes(StandardCharsets.UTF_8));
            producer.send(r);
        }
        producer.flush();
    }

    private static long stored(String consumer) {
        return postgres.database().queryLong("SELECT count(*) FROM inbox_event WHERE consumer = '" + consumer + "'");
    }

    @Test
    void an_after_store_callback_that_throws_does_not_make_the_consumer_read_the_stored_batch_again()
            throws Exception {
        OutboxSchema schema = OutboxSchema.builder().schema(postgres.database().schema()).build();
        schema.migrate(postgres.database().dataSource());
        KafkaBroker kafka = KafkaBroker.shared();
        String topic = "after-store-" + UUID.randomUUID();
        kafka.createTopic(topic, 1);
        String consumer = "after-store-" + UUID.randomUUID();
        AtomicInteger calls = new AtomicInteger();
        Properties p = new Properties();
        p.put("bootstrap.servers", kafka.bootstrapServers());
        p.put("key.serializer", ByteArraySerializer.class.getName());
        p.put("value.serializer", ByteArraySerializer.class.getName());
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(p);
                KafkaInboxConsumer c = KafkaInboxConsumer.builder().bootstrapServers(kafka.bootstrapServers())
                        .groupId(consumer).topics(topic).dataSource(postgres.database().dataSource()).schema(schema)
                        .storeInInbox().pollTimeout(Duration.ofMillis(100))
                        .afterStore(() -> {
                            calls.incrementAndGet();
                            throw new IllegalStateException("callback failed");
                        })
                        .build().start()) {
            produce(producer, topic, 0, 5);
            await().atMost(AWAIT).until(() -> stored(consumer) == 5);
            // a later record is stored too: the loop went on past the failed callback
            produce(producer, topic, 5, 6);
            await().atMost(AWAIT).until(() -> stored(consumer) == 6);
            assertThat(c.stats().polled()).as("every record polled once: nothing read again").isEqualTo(6);
            await().atMost(AWAIT).until(() -> c.stats().batches() == calls.get());
            assertThat(c.stats().stored()).isEqualTo(6);
            assertThat(c.stats().loopErrors()).isZero();
            assertThat(c.stats().afterStoreFailures()).isEqualTo(calls.get());
        }
    }
}
