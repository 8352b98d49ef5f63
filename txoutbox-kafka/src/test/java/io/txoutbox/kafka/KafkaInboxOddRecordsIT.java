package io.txoutbox.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.txoutbox.InboxEvent;
import io.txoutbox.InboxWorker;
import io.txoutbox.OutboxSchema;
import io.txoutbox.testing.kafka.KafkaBroker;
import io.txoutbox.testing.postgres.PostgresExtension;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.kafka.clients.consumer.ConsumerRecord;
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
@Tag("pg-edge-majors")
class KafkaInboxOddRecordsIT {

    @RegisterExtension
    static final PostgresExtension postgres = new PostgresExtension();
    private static final Duration AWAIT = Duration.ofMinutes(2);
    /** The issue's bound: the records behind and beside an odd one are stored within 5 s of being produced. */
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
        return send(topic, partition, key, "{\"n\":1}".getBytes(StandardCharsets.UTF_8), Map.of());
    }

    /** Sends a record with an event id, event type "Odd" and the given extra headers (name to bytes). */
    private static UUID send(String topic, int partition, byte[] key, byte[] value, Map<String, byte[]> headers)
            throws Exception {
        UUID id = UUID.randomUUID();
        ProducerRecord<byte[], byte[]> r = new ProducerRecord<>(topic, partition, key, value);
        r.headers().add(KafkaHeaders.EVENT_ID, id.toString().getBytes(StandardCharsets.UTF_8));
        if (!headers.containsKey(KafkaHeaders.EVENT_TYPE)) {
            r.headers().add(KafkaHeaders.EVENT_TYPE, "Odd".getBytes(StandardCharsets.UTF_8));
        }
        headers.forEach((name, bytes) -> r.headers().add(name, bytes));
        producer.send(r).get();
        return id;
    }

    private static String column(String consumer, UUID id, String column) {
        try (Connection c = postgres.database().connect();
                PreparedStatement ps = c.prepareStatement(
                        "SELECT " + column + " FROM inbox_event WHERE consumer = ? AND event_id = ?")) {
            ps.setString(1, consumer);
            ps.setObject(2, id);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() ? rs.getString(1) : null;
            }
        } catch (java.sql.SQLException e) {
            throw new IllegalStateException(e);
        }
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
                .consumer(consumer).topics(topic).dataSource(postgres.database().dataSource()).schema(schema)
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

    private static final byte[] SCHEMA_REGISTRY_KEY = InboxAcceptanceTest.SCHEMA_REGISTRY_KEY;
    private static final byte[] INVALID_UTF8_KEY = InboxAcceptanceTest.INVALID_UTF8_KEY;

    @Test
    void store_mode_keeps_an_event_type_with_nul_and_groups_text_keys_apart_from_the_bytes_they_look_like()
            throws Exception {
        String topic = "odd-bytes-" + UUID.randomUUID();
        kafka.createTopic(topic, 1);
        String consumer = "odd-bytes-" + UUID.randomUUID();
        byte[] nulType = {'T', 0x00, 'x'};
        byte[] binaryHeader = {(byte) 0xFF, 0x00, 0x01};
        Map<UUID, InboxEvent> seen = new ConcurrentHashMap<>();
        List<String> keysInOrder = java.util.Collections.synchronizedList(new ArrayList<>());
        try (InboxWorker worker = InboxWorker.builder().dataSource(postgres.database().dataSource()).schema(schema)
                .consumer(consumer).pollInterval(Duration.ofMillis(50))
                .defaultHandler((c, e) -> {
                    seen.put(e.eventId(), e);
                    keysInOrder.add(e.key());
                }).build().start();
                KafkaInboxConsumer c = storeMode(topic, consumer).afterStore(worker::nudge).build().start()) {
            UUID sr1 = send(topic, 0, SCHEMA_REGISTRY_KEY);
            UUID bad = send(topic, 0, INVALID_UTF8_KEY, "{}".getBytes(StandardCharsets.UTF_8),
                    Map.of("trace", binaryHeader, KafkaHeaders.EVENT_TYPE, nulType));
            UUID sr2 = send(topic, 0, SCHEMA_REGISTRY_KEY);
            UUID text = send(topic, 0, "\\x002a".getBytes(StandardCharsets.UTF_8)); // a text key that looks like hex
            await().atMost(AWAIT).until(() -> seen.size() == 4);
            // the key and header bytes themselves: InboxAcceptanceTest, in both modes
            assertThat(seen.get(sr2).keyBytes()).isEqualTo(SCHEMA_REGISTRY_KEY);
            InboxEvent b = seen.get(bad);
            assertThat(b.headerBytes().get(KafkaHeaders.EVENT_TYPE)).isEqualTo(nulType);
            assertThat(b.eventType()).isEqualTo("\\x540078");
            assertThat(seen.get(text).key()).as("a text key reads as itself").isEqualTo("\\x002a");
            assertThat(seen.get(text).keyBytes()).isEqualTo("\\x002a".getBytes(StandardCharsets.UTF_8));
            assertThat(column(consumer, text, "partition_key")).as("but groups apart from the bytes 00 2a")
                    .isEqualTo("\\x5c7830303261");
            assertThat(column(consumer, sr1, "partition_key")).isEqualTo(column(consumer, sr2, "partition_key"));
            assertThat(c.stats().loopErrors()).isZero();
            assertThat(c.stats().deadLettered()).isZero();
        }
    }

    @Test
    void a_record_the_database_refuses_or_with_an_unreadable_version_becomes_a_dead_row_and_its_partition_moves_on()
            throws Exception {
        String topic = "odd-refused-" + UUID.randomUUID();
        kafka.createTopic(topic, 1);
        String consumer = "odd-refused-" + UUID.randomUUID();
        // a limit of the operator's own, which the database enforces per row
        postgres.database().execute("ALTER TABLE inbox_event ADD CONSTRAINT payload_limit_0x"
                + " CHECK (consumer <> '" + consumer + "' OR octet_length(payload) <= 1000)");
        try (KafkaInboxConsumer c = storeMode(topic, consumer).build().start()) {
            UUID before = send(topic, 0, "k".getBytes(StandardCharsets.UTF_8));
            UUID big = send(topic, 0, "k".getBytes(StandardCharsets.UTF_8), new byte[5_000], Map.of());
            UUID badVersion = send(topic, 0, "k".getBytes(StandardCharsets.UTF_8), "{}".getBytes(StandardCharsets.UTF_8),
                    Map.of(KafkaHeaders.AGGREGATE_VERSION, "seven".getBytes(StandardCharsets.UTF_8)));
            UUID after = send(topic, 0, "k".getBytes(StandardCharsets.UTF_8));
            await().atMost(AWAIT).until(() -> stored(consumer, after) == 1);
            assertThat(stored(consumer, before)).isEqualTo(1);
            assertThat(column(consumer, big, "state")).isEqualTo("DEAD");
            assertThat(column(consumer, big, "last_error")).contains("payload_limit_").contains("23514")
                    .contains(topic + "-0@");
            assertThat(column(consumer, badVersion, "state")).isEqualTo("DEAD");
            assertThat(column(consumer, badVersion, "last_error")).contains("not a number");
            assertThat(column(consumer, badVersion, "convert_from(payload, 'UTF8')")).as("kept whole").isEqualTo("{}");
            assertThat(column(consumer, after, "state")).isEqualTo("PENDING");
            assertThat(c.stats().deadLettered()).isEqualTo(2);
            assertThat(c.stats().loopErrors()).isZero();
        } finally {
            postgres.database().execute("ALTER TABLE inbox_event DROP CONSTRAINT payload_limit_0x");
        }
    }

    @Test
    void with_a_dead_letter_topic_a_record_the_database_refuses_goes_there_with_the_reason() throws Exception {
        String topic = "odd-dlt-" + UUID.randomUUID();
        String dlt = topic + ".dlt";
        kafka.createTopic(topic, 1);
        kafka.createTopic(dlt, 1);
        String consumer = "odd-dlt-" + UUID.randomUUID();
        postgres.database().execute("ALTER TABLE inbox_event ADD CONSTRAINT refuse_type_x"
                + " CHECK (consumer <> '" + consumer + "' OR event_type <> 'Refused')");
        try (KafkaInboxConsumer c = storeMode(topic, consumer).deadLetterTopic(dlt).build().start()) {
            UUID refused = send(topic, 0, SCHEMA_REGISTRY_KEY, "{}".getBytes(StandardCharsets.UTF_8),
                    Map.of(KafkaHeaders.EVENT_TYPE, "Refused".getBytes(StandardCharsets.UTF_8)));
            UUID after = send(topic, 0, SCHEMA_REGISTRY_KEY);
            await().atMost(AWAIT).until(() -> stored(consumer, after) == 1);
            assertThat(stored(consumer, refused)).isZero();
            List<ConsumerRecord<byte[], byte[]>> dead = InboxAcceptanceTest.readAll(kafka.bootstrapServers(), dlt, 1);
            assertThat(dead).hasSize(1);
            assertThat(dead.get(0).key()).isEqualTo(SCHEMA_REGISTRY_KEY);
            assertThat(new String(dead.get(0).headers().lastHeader(KafkaHeaders.DLT_REASON).value(),
                    StandardCharsets.UTF_8)).contains("refuse_type_x");
            assertThat(c.stats().deadLettered()).isEqualTo(1);
            assertThat(c.stats().loopErrors()).isZero();
        } finally {
            postgres.database().execute("ALTER TABLE inbox_event DROP CONSTRAINT refuse_type_x");
        }
    }

    @Test
    void a_failure_of_the_database_itself_is_not_blamed_on_the_record_the_batch_is_read_again() throws Exception {
        String topic = "odd-outage-" + UUID.randomUUID();
        kafka.createTopic(topic, 1);
        String consumer = "odd-outage-" + UUID.randomUUID();
        // every insert of this consumer fails as a server that is shutting down would (SQLState class 57)
        postgres.database().execute("CREATE FUNCTION outage_x() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN"
                + " IF NEW.consumer = '" + consumer + "' THEN RAISE EXCEPTION 'simulated outage' USING ERRCODE"
                + " = '57P03'; END IF; RETURN NEW; END $$",
                "CREATE TRIGGER outage_x BEFORE INSERT ON inbox_event FOR EACH ROW EXECUTE FUNCTION outage_x()");
        boolean dropped = false;
        try (KafkaInboxConsumer c = storeMode(topic, consumer).build().start()) {
            UUID id = send(topic, 0, new byte[] {0x00, 0x2a});
            await().atMost(AWAIT).until(() -> c.stats().loopErrors() >= 2);
            assertThat(postgres.database().queryLong("SELECT count(*) FROM inbox_event WHERE consumer = '"
                    + consumer + "'")).as("no DEAD row for an outage").isZero();
            postgres.database().execute("DROP TRIGGER outage_x ON inbox_event", "DROP FUNCTION outage_x()");
            dropped = true;
            await().atMost(AWAIT).until(() -> stored(consumer, id) == 1);
            assertThat(column(consumer, id, "state")).isEqualTo("PENDING");
            assertThat(c.stats().polled()).as("read again after each failure").isGreaterThanOrEqualTo(3);
            assertThat(c.stats().deadLettered()).isZero();
        } finally {
            if (!dropped) {
                postgres.database().execute("DROP TRIGGER outage_x ON inbox_event", "DROP FUNCTION outage_x()");
            }
        }
    }
}
