package io.txoutbox.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.txoutbox.OutboxSchema;
import io.txoutbox.testing.kafka.KafkaBroker;
import io.txoutbox.testing.postgres.PostgresExtension;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.util.Properties;
import java.util.UUID;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** Records whose key or headers are not plain text, or that the database refuses, must never stall a partition. */
@Tag("pg-version")
class KafkaInboxOddRecordsIT {

    @RegisterExtension
    static final PostgresExtension postgres = new PostgresExtension();
    private static final Duration AWAIT = Duration.ofMinutes(2);
    /** The bound: the records behind and beside an odd one are stored within 5 s of being produced. */
    private static final Duration STORED_WITHIN = Duration.ofSeconds(5);

    private static KafkaBroker kafka;
    private static OutboxSchema schema;
    private static KafkaProducer<byte[], byte[]> producer;

    @BeforeAll
    static void setUp() {
        kafka = KafkaBroker.shared();
        schema = OutboxSchema.builder().schema(postgres.database().schema()).build();
        schema.migrate(postgres.database().dataSource());
        Properties p = new Properties();
        p.put("bootstrap.servers", kafka.bootstrapServers());
        p.put("key.serializer", ByteArraySerializer.class.getName());
        p.put("value.serializer", ByteArraySerializer.class.getName());
        producer = new KafkaProducer<>(p);
    }

    @AfterAll
    static void tearDown() {
        producer.close();
    }

    private static UUID send(String topic, int partition, byte[] key) throws Exception {
        UUID id = UUID.randomUUID();
        ProducerRecord<byte[], byte[]> r = new ProducerRecord<>(topic, partition, key,
                "{\"n\":1}".getBytes(StandardCharsets.UTF_8));
        r.headers().add(KafkaHeaders.EVENT_ID, id.toString().getBytes(StandardCharsets.UTF_8));
        r.headers().add(KafkaHeaders.EVENT_TYPE, "Odd".getBytes(StandardCharsets.UTF_8));
        producer.send(r).get();
        return id;
    }

    private static long stored(String consumer, UUID id) {
        return postgres.database().queryLong("SELECT count(*) FROM inbox_event WHERE consumer = '" + consumer
                + "' AND event_id = '" + id + "'");
    }

    private static byte[] storedKeyBytes(String consumer, UUID id) throws Exception {
        try (Connection c = postgres.database().connect();
                PreparedStatement ps = c.prepareStatement(
                        "SELECT key_bytes FROM inbox_event WHERE consumer = ? AND event_id = ?")) {
            ps.setString(1, consumer);
            ps.setObject(2, id);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() ? rs.getBytes(1) : null;
            }
        }
    }

    private static KafkaInboxConsumer.Builder storeMode(String topic, String consumer) {
        return KafkaInboxConsumer.builder().bootstrapServers(kafka.bootstrapServers()).groupId(consumer)
                .consumerName(consumer).topics(topic).dataSource(postgres.database().dataSource()).schema(schema)
                .storeInInbox().pollTimeout(Duration.ofMillis(100));
    }

    /** Starts the loop and waits until it stores a first record on each partition (the group has joined). */
    private static void awaitRunning(KafkaInboxConsumer c, String topic, String consumer, int partitions)
            throws Exception {
        for (int p = 0; p < partitions; p++) {
            UUID warmUp = send(topic, p, ("warm-up-" + p).getBytes(StandardCharsets.UTF_8));
            await().atMost(AWAIT).until(() -> stored(consumer, warmUp) == 1);
        }
    }

    @Test
    void a_key_with_a_nul_byte_does_not_stall_its_partition_or_another_one() throws Exception {
        String topic = "odd-key-" + UUID.randomUUID();
        kafka.createTopic(topic, 2);
        String consumer = "odd-" + UUID.randomUUID();
        byte[] oddKey = {0x00, 0x2a};
        try (KafkaInboxConsumer c = storeMode(topic, consumer).build().start()) {
            awaitRunning(c, topic, consumer, 2);
            UUID odd = send(topic, 0, oddKey);
            UUID behind = send(topic, 0, "normal-0".getBytes(StandardCharsets.UTF_8));
            UUID beside = send(topic, 1, "normal-1".getBytes(StandardCharsets.UTF_8));
            long t0 = System.nanoTime();
            await().atMost(STORED_WITHIN).until(() -> stored(consumer, behind) == 1 && stored(consumer, beside) == 1);
            System.out.printf("odd key: the records behind and beside it stored %d ms after they were produced%n",
                    (System.nanoTime() - t0) / 1_000_000);
            assertThat(stored(consumer, odd)).as("the odd record is stored (no dead-letter topic configured)")
                    .isEqualTo(1);
            assertThat(storedKeyBytes(consumer, odd)).as("its key, byte for byte").isEqualTo(oddKey);
            assertThat(c.stats().loopErrors()).isZero();
        }
    }
}
