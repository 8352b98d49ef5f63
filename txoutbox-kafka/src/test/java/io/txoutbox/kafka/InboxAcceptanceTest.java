package io.txoutbox.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.txoutbox.InboxEvent;
import io.txoutbox.InboxHandler;
import io.txoutbox.OutboxException;
import io.txoutbox.OutboxSchema;
import io.txoutbox.testing.kafka.KafkaBroker;
import io.txoutbox.testing.postgres.PostgresExtension;
import java.nio.charset.StandardCharsets;
import java.sql.PreparedStatement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * What every way of feeding the inbox from Kafka must do, written once: each event applied once across duplicates,
 * a replay and a redelivery after a crash between the database commit and the offset commit; a key's events applied
 * in order; a poison event kept aside (dead letter, dead or parked row) while its partition moves on. A subclass
 * says how its mode runs the handler ({@link #start}) and where a poison event ends ({@link #assertKeptAside}); its
 * mode-specific scenarios stay in the subclass.
 */
@Tag("pg-version")
@Tag("pg-edge-majors")
abstract class InboxAcceptanceTest {

    @RegisterExtension
    static final PostgresExtension postgres = new PostgresExtension();
    static final Duration AWAIT = Duration.ofMinutes(2);
    static final int PARTITIONS = 3;

    static KafkaBroker kafka;
    static OutboxSchema schema;

    /** A running consumer of the mode under test (for store mode with the worker that runs the handler). */
    record Running(KafkaInboxConsumer consumer, Runnable closer) implements AutoCloseable {
        @Override
        public void close() {
            closer.run();
        }
    }

    /** One scenario's names: topic, dead-letter topic, inbox consumer. */
    record Names(String topic, String deadLetterTopic, String consumer) {
    }

    @BeforeAll
    static void setUpSuite() {
        kafka = KafkaBroker.shared();
        schema = OutboxSchema.builder().schema(postgres.database().schema()).build();
        schema.migrate(postgres.database().dataSource());
        postgres.database().execute("CREATE TABLE IF NOT EXISTS effect (n bigserial PRIMARY KEY, consumer text NOT NULL,"
                + " event_id uuid NOT NULL, k text, seq int)");
    }

    /**
     * Starts the mode under test on {@code names.topic()} in consumer group {@code group} for the inbox consumer
     * {@code names.consumer()}, running {@code handler} once per event.
     */
    abstract Running start(Names names, String group, InboxHandler handler);

    /** The poison event is not applied, and is kept where this mode keeps such events. */
    abstract void assertKeptAside(Names names, UUID poison) throws Exception;

    // ---- the scenarios ----------------------------------------------------------------------------------------

    @Test
    final void each_event_is_applied_once_across_duplicates_and_a_replay_of_the_topic() throws Exception {
        Names names = names("once");
        int events = 200;
        produce(names.topic(), events, 2, null);
        for (String group : List.of(names.consumer(), names.consumer() + "-replay")) {
            try (Running r = start(names, group, recordEffect())) {
                await().atMost(AWAIT).until(() -> r.consumer().stats().polled() >= 2L * events);
                await().atMost(AWAIT).until(() -> effects(names.consumer()) == events);
            }
        }
        assertThat(effects(names.consumer())).isEqualTo(events);
        assertThat(distinctEffects(names.consumer())).isEqualTo(events);
    }

    @Test
    final void a_redelivery_after_a_crash_between_the_database_commit_and_the_offset_commit_applies_nothing_twice()
            throws Exception {
        Names names = names("crash");
        int events = 150;
        produce(names.topic(), events, 1, null);
        try (Running r = start(names, names.consumer(), recordEffect())) {
            await().atMost(AWAIT).until(() -> effects(names.consumer()) == events);
        }
        // what a crash in the window leaves: every effect committed, no offset committed
        rewindGroup(names.consumer(), names.topic());
        assertThat(committed(names.consumer(), names.topic())).isZero();
        try (Running r = start(names, names.consumer(), recordEffect())) {
            // offsets are committed only after the database commit: once they are back at the end, all is redone
            await().atMost(AWAIT).until(() -> committed(names.consumer(), names.topic()) == events);
            await().atMost(AWAIT).until(() -> pending(names.consumer()) == 0);
            assertThat(r.consumer().stats().polled()).isGreaterThanOrEqualTo(events);
        }
        assertThat(effects(names.consumer())).isEqualTo(events);
        assertThat(distinctEffects(names.consumer())).isEqualTo(events);
    }

    @Test
    final void the_events_of_one_key_are_applied_in_the_order_they_were_produced() throws Exception {
        Names names = names("order");
        int events = 300;
        produce(names.topic(), events, 1, null);
        try (Running r = start(names, names.consumer(), recordEffect())) {
            await().atMost(AWAIT).until(() -> effects(names.consumer()) == events);
        }
        Map<String, List<Integer>> byKey = appliedByKey(names.consumer());
        assertThat(byKey).hasSize(5);
        byKey.forEach((key, seqs) -> assertThat(seqs).as("key " + key).isSorted().doesNotHaveDuplicates());
    }

    @Test
    final void a_poison_event_is_kept_aside_and_its_partition_moves_on() throws Exception {
        Names names = names("poison");
        int events = 120;
        List<UUID> ids = produce(names.topic(), events, 1, "poison");
        UUID poison = ids.get(events / 2);
        InboxHandler effect = recordEffect();
        InboxHandler handler = (c, e) -> {
            if (e.eventId().equals(poison)) {
                throw new OutboxException("rule violated by event " + e.eventId()); // permanent
            }
            effect.handle(c, e);
        };
        try (Running r = start(names, names.consumer(), handler)) {
            await().atMost(AWAIT).until(() -> effects(names.consumer()) == events - 1);
            assertThat(r.consumer().stats().loopErrors()).isZero();
        }
        assertThat(distinctEffects(names.consumer())).isEqualTo(events - 1);
        assertKeptAside(names, poison);
    }

    /** A Schema Registry serializer's key: magic byte 0x00, a 4-byte schema id, then the serialized key. */
    static final byte[] SCHEMA_REGISTRY_KEY = {0x00, 0x00, 0x00, 0x00, 0x07, 0x02, 0x34};
    /** Not UTF-8: a lone continuation byte and a truncated two-byte sequence. */
    static final byte[] INVALID_UTF8_KEY = {'k', (byte) 0x80, (byte) 0xC3};

    @Test
    final void keys_and_header_values_that_are_not_text_reach_the_handler_byte_for_byte() throws Exception {
        Names names = names("bytes");
        byte[] binaryHeader = {(byte) 0xFF, 0x00, 0x01};
        byte[] nulId = {'a', 0x00, 'b'};
        Map<UUID, InboxEvent> seen = new ConcurrentHashMap<>();
        try (Running r = start(names, names.consumer(), (c, e) -> seen.put(e.eventId(), e))) {
            UUID sr = send(names.topic(), SCHEMA_REGISTRY_KEY, Map.of());
            UUID bad = send(names.topic(), INVALID_UTF8_KEY, Map.of("trace", binaryHeader,
                    KafkaHeaders.AGGREGATE_TYPE, "Order".getBytes(StandardCharsets.UTF_8),
                    KafkaHeaders.AGGREGATE_ID, nulId));
            await().atMost(AWAIT).until(() -> seen.size() == 2);
            assertThat(seen.get(sr).keyBytes()).isEqualTo(SCHEMA_REGISTRY_KEY);
            assertThat(seen.get(sr).key()).isEqualTo("\\x00000000070234");
            InboxEvent b = seen.get(bad);
            assertThat(b.keyBytes()).isEqualTo(INVALID_UTF8_KEY);
            assertThat(b.key()).isEqualTo("\\x6b80c3");
            assertThat(b.headerBytes().get("trace")).isEqualTo(binaryHeader);
            assertThat(b.headers().get("trace")).isEqualTo("\\xff0001");
            assertThat(b.headerBytes().get(KafkaHeaders.AGGREGATE_ID)).isEqualTo(nulId);
            assertThat(r.consumer().stats().loopErrors()).isZero();
            assertThat(r.consumer().stats().deadLettered()).isZero();
        }
    }

    // ---- fixtures for the subclasses --------------------------------------------------------------------------

    static Names names(String scenario) {
        String id = scenario + "-" + UUID.randomUUID();
        Names names = new Names("inbox-" + id, "inbox-" + id + ".dlt", "c-" + id);
        kafka.createTopic(names.topic(), PARTITIONS);
        kafka.createTopic(names.deadLetterTopic(), 1);
        return names;
    }

    /**
     * Produces {@code events} events with the relay's headers, {@code copies} times each (a replayed relay batch),
     * keys {@code k0..k4} with a rising {@code seq} per event; the middle one gets {@code oddKey} when it is given.
     */
    static List<UUID> produce(String topic, int events, int copies, String oddKey) throws Exception {
        List<UUID> ids = new ArrayList<>();
        for (int i = 0; i < events; i++) {
            ids.add(UUID.randomUUID());
        }
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(producerProperties())) {
            for (int round = 0; round < copies; round++) {
                for (int i = 0; i < events; i++) {
                    String key = i == events / 2 && oddKey != null ? oddKey : "k" + (i % 5);
                    ProducerRecord<byte[], byte[]> r = new ProducerRecord<>(topic, key.getBytes(StandardCharsets.UTF_8),
                            ("{\"seq\":" + i + "}").getBytes(StandardCharsets.UTF_8));
                    r.headers().add(KafkaHeaders.EVENT_ID, ids.get(i).toString().getBytes(StandardCharsets.UTF_8));
                    r.headers().add(KafkaHeaders.EVENT_TYPE, "Seq".getBytes(StandardCharsets.UTF_8));
                    producer.send(r);
                }
            }
            producer.flush();
        }
        return ids;
    }

    /** Sends one record to partition 0: an event id, event type "Seq", a payload with seq 0, extra headers. */
    static UUID send(String topic, byte[] key, Map<String, byte[]> headers) throws Exception {
        UUID id = UUID.randomUUID();
        ProducerRecord<byte[], byte[]> r = new ProducerRecord<>(topic, 0, key,
                "{\"seq\":0}".getBytes(StandardCharsets.UTF_8));
        r.headers().add(KafkaHeaders.EVENT_ID, id.toString().getBytes(StandardCharsets.UTF_8));
        r.headers().add(KafkaHeaders.EVENT_TYPE, "Seq".getBytes(StandardCharsets.UTF_8));
        headers.forEach((name, bytes) -> r.headers().add(name, bytes));
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(producerProperties())) {
            producer.send(r).get();
        }
        return id;
    }

    static Properties producerProperties() {
        Properties p = new Properties();
        p.put("bootstrap.servers", kafka.bootstrapServers());
        p.put("key.serializer", ByteArraySerializer.class.getName());
        p.put("value.serializer", ByteArraySerializer.class.getName());
        return p;
    }

    /** The handler of every scenario: one effect row per call, in the handler's transaction. */
    static InboxHandler recordEffect() {
        return (c, e) -> {
            try (PreparedStatement ps = c.prepareStatement(
                    "INSERT INTO effect (consumer, event_id, k, seq) VALUES (?, ?, ?, ?)")) {
                ps.setString(1, e.consumer());
                ps.setObject(2, e.eventId());
                ps.setString(3, e.key());
                ps.setInt(4, Integer.parseInt(e.payloadAsString().replaceAll("\\D", "")));
                ps.executeUpdate();
            }
        };
    }

    static long effects(String consumer) {
        return postgres.database().queryLong("SELECT count(*) FROM effect WHERE consumer = '" + consumer + "'");
    }

    static long distinctEffects(String consumer) {
        return postgres.database().queryLong("SELECT count(DISTINCT event_id) FROM effect WHERE consumer = '"
                + consumer + "'");
    }

    private static Map<String, List<Integer>> appliedByKey(String consumer) throws Exception {
        List<String[]> rows = new ArrayList<>();
        try (var c = postgres.database().connect();
                PreparedStatement ps = c.prepareStatement("SELECT k, seq FROM effect WHERE consumer = ? ORDER BY n")) {
            ps.setString(1, consumer);
            try (var rs = ps.executeQuery()) {
                while (rs.next()) {
                    rows.add(new String[] {rs.getString(1), rs.getString(2)});
                }
            }
        }
        return rows.stream().collect(Collectors.groupingBy(r -> r[0], Collectors.mapping(r -> Integer.valueOf(r[1]),
                Collectors.toList())));
    }

    /** Sets the group's committed offsets back to the start of every partition of the topic. */
    private static void rewindGroup(String group, String topic) throws Exception {
        Map<TopicPartition, OffsetAndMetadata> start = new java.util.HashMap<>();
        for (int p = 0; p < PARTITIONS; p++) {
            start.put(new TopicPartition(topic, p), new OffsetAndMetadata(0));
        }
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers()))) {
            // the group is empty once its consumer closed; the broker refuses the change until it is
            await().atMost(AWAIT).ignoreExceptions().until(() -> {
                admin.alterConsumerGroupOffsets(group, start).all().get(10, TimeUnit.SECONDS);
                return true;
            });
        }
    }

    /** The group's committed offsets on the topic, summed (one copy of each event: how many are done). */
    private static long committed(String group, String topic) throws Exception {
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers()))) {
            return admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get(10, TimeUnit.SECONDS)
                    .entrySet().stream().filter(e -> e.getKey().topic().equals(topic) && e.getValue() != null)
                    .mapToLong(e -> e.getValue().offset()).sum();
        }
    }

    /** Inbox rows of the consumer still to be handled (store mode; none in handle mode). */
    static long pending(String consumer) {
        return postgres.database().queryLong("SELECT count(*) FROM inbox_event WHERE consumer = '" + consumer
                + "' AND state = 'PENDING'");
    }

    static List<ConsumerRecord<byte[], byte[]>> readAll(String topic, int expected) {
        return readAll(kafka.bootstrapServers(), topic, expected);
    }

    /** Reads the topic from its start until {@code expected} records came, or {@link #AWAIT} passed. */
    static List<ConsumerRecord<byte[], byte[]>> readAll(String bootstrapServers, String topic, int expected) {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrapServers);
        p.put("group.id", "reader-" + UUID.randomUUID());
        p.put("auto.offset.reset", "earliest");
        p.put("key.deserializer", ByteArrayDeserializer.class.getName());
        p.put("value.deserializer", ByteArrayDeserializer.class.getName());
        List<ConsumerRecord<byte[], byte[]>> out = new ArrayList<>();
        try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(p)) {
            c.subscribe(List.of(topic));
            long deadline = System.nanoTime() + AWAIT.toNanos();
            while (out.size() < expected && System.nanoTime() < deadline) {
                c.poll(Duration.ofMillis(200)).forEach(out::add);
            }
        }
        return out;
    }

    static String header(ConsumerRecord<byte[], byte[]> r, String name) {
        var h = r.headers().lastHeader(name);
        return h == null ? null : new String(h.value(), StandardCharsets.UTF_8);
    }
}
