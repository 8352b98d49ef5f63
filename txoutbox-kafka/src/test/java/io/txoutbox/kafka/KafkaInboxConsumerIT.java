package io.txoutbox.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.txoutbox.InboxHandler;
import io.txoutbox.InboxWorker;
import io.txoutbox.OutboxException;
import io.txoutbox.OutboxSchema;
import io.txoutbox.RetryPolicy;
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
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

@Tag("pg-version")
class KafkaInboxConsumerIT {

    @RegisterExtension
    static final PostgresExtension postgres = new PostgresExtension();
    private static final Duration AWAIT = Duration.ofMinutes(2);

    private static KafkaBroker kafka;
    private static OutboxSchema schema;

    @BeforeAll
    static void setUp() {
        kafka = KafkaBroker.shared();
        schema = OutboxSchema.builder().schema(postgres.database().schema()).build();
        schema.migrate(postgres.database().dataSource());
        postgres.database().execute("CREATE TABLE effect (consumer text NOT NULL, event_id uuid NOT NULL,"
                + " k text, seq int)");
    }

    /** Sends each event twice (a replayed relay batch), with the relay's headers; returns the event ids. */
    private static List<UUID> produceTwice(String topic, int events, String poisonKey) {
        List<UUID> ids = new ArrayList<>();
        Properties p = new Properties();
        p.put("bootstrap.servers", kafka.bootstrapServers());
        p.put("key.serializer", ByteArraySerializer.class.getName());
        p.put("value.serializer", ByteArraySerializer.class.getName());
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(p)) {
            for (int round = 0; round < 2; round++) {
                for (int i = 0; i < events; i++) {
                    if (round == 0) {
                        ids.add(UUID.randomUUID());
                    }
                    String key = i == events / 2 && poisonKey != null ? poisonKey : "k" + (i % 5);
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

    private static InboxHandler recordEffect() {
        return (c, e) -> {
            try (PreparedStatement ps = c.prepareStatement("INSERT INTO effect VALUES (?, ?, ?, ?)")) {
                ps.setString(1, e.consumer());
                ps.setObject(2, e.eventId());
                ps.setString(3, e.key());
                ps.setInt(4, Integer.parseInt(e.payloadAsString().replaceAll("\\D", "")));
                ps.executeUpdate();
            }
        };
    }

    private static long effects(String consumer) {
        return postgres.database().queryLong("SELECT count(*) FROM effect WHERE consumer = '" + consumer + "'");
    }

    private static long distinctEffects(String consumer) {
        return postgres.database().queryLong("SELECT count(DISTINCT event_id) FROM effect WHERE consumer = '"
                + consumer + "'");
    }

    @Test
    void handle_mode_applies_each_event_once_across_duplicates_and_a_replay_and_dead_letters_the_poison()
            throws Exception {
        String topic = "handle-" + UUID.randomUUID();
        String dlt = topic + ".dlt";
        kafka.createTopic(topic, 3);
        kafka.createTopic(dlt, 1);
        int events = 300;
        List<UUID> ids = produceTwice(topic, events, "poison");
        UUID poison = ids.get(events / 2);
        UUID flaky = ids.get(7);
        Map<UUID, AtomicInteger> flakyCalls = new ConcurrentHashMap<>();
        InboxHandler effect = recordEffect();
        InboxHandler handler = (c, e) -> {
            if (e.eventId().equals(poison)) {
                throw new OutboxException("rule violated by event " + e.eventId()); // permanent
            }
            if (e.eventId().equals(flaky) && flakyCalls.computeIfAbsent(flaky, x -> new AtomicInteger())
                    .incrementAndGet() <= 2) {
                throw new IllegalStateException("downstream timeout"); // transient, twice
            }
            effect.handle(c, e);
        };
        String consumer = "billing-" + UUID.randomUUID();
        RetryPolicy fast = RetryPolicy.defaults().withMaxAttempts(4)
                .withBackoff(Duration.ofMillis(50), Duration.ofMillis(200));
        for (String group : List.of(consumer, consumer + "-replay")) { // the second group replays the whole topic
            try (KafkaInboxConsumer c = KafkaInboxConsumer.builder().bootstrapServers(kafka.bootstrapServers())
                    .groupId(group).consumer(consumer).topics(topic).dataSource(postgres.database().dataSource())
                    .schema(schema).handler(handler).retry(fast).deadLetterTopic(dlt)
                    .pollTimeout(Duration.ofMillis(100)).build().start()) {
                await().atMost(AWAIT).until(() -> c.stats().polled() >= 2L * events);
                await().atMost(AWAIT).until(() -> c.stats().applied() + c.stats().duplicates()
                        + c.stats().deadLettered() == 2L * events);
                if (group.equals(consumer)) {
                    assertThat(c.stats().applied()).isEqualTo(events - 1);
                    assertThat(c.stats().retries()).isEqualTo(2);
                    assertThat(c.stats().deadLettered()).as("poison, twice (it is on the topic twice)").isEqualTo(2);
                } else {
                    assertThat(c.stats().applied()).isZero();
                }
            }
        }
        assertThat(effects(consumer)).isEqualTo(events - 1);
        assertThat(distinctEffects(consumer)).isEqualTo(events - 1);
        assertThat(flakyCalls.get(flaky).get()).isEqualTo(3);

        List<ConsumerRecord<byte[], byte[]>> dead = readAll(dlt, 4);
        assertThat(dead).hasSize(4); // twice per consumer group
        ConsumerRecord<byte[], byte[]> d = dead.get(0);
        assertThat(header(d, KafkaHeaders.EVENT_ID)).isEqualTo(poison.toString());
        assertThat(header(d, DeadLetterHeaders.REASON)).contains("rule violated");
        assertThat(header(d, DeadLetterHeaders.EXCEPTION)).isEqualTo(OutboxException.class.getName());
        assertThat(header(d, DeadLetterHeaders.ORIGINAL_TOPIC)).isEqualTo(topic);
        assertThat(header(d, DeadLetterHeaders.ORIGINAL_PARTITION)).matches("[0-2]");
        assertThat(header(d, DeadLetterHeaders.ORIGINAL_OFFSET)).matches("\\d+");
        assertThat(new String(d.key(), StandardCharsets.UTF_8)).isEqualTo("poison");
    }

    @Test
    void store_mode_with_a_worker_applies_each_event_once_and_foreign_records_get_stable_derived_ids()
            throws Exception {
        String topic = "store-" + UUID.randomUUID();
        kafka.createTopic(topic, 3);
        int events = 400;
        produceTwice(topic, events, null);
        // a foreign producer: no event_id header, sent once; the replay must still dedupe it
        Properties p = new Properties();
        p.put("bootstrap.servers", kafka.bootstrapServers());
        p.put("key.serializer", ByteArraySerializer.class.getName());
        p.put("value.serializer", ByteArraySerializer.class.getName());
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(p)) {
            ProducerRecord<byte[], byte[]> r = new ProducerRecord<>(topic, "foreign".getBytes(StandardCharsets.UTF_8),
                    "{\"seq\":1}".getBytes(StandardCharsets.UTF_8));
            r.headers().add(KafkaHeaders.EVENT_TYPE, "Seq".getBytes(StandardCharsets.UTF_8));
            producer.send(r).get();
        }
        String consumer = "ledger-" + UUID.randomUUID();
        try (InboxWorker worker = InboxWorker.builder().dataSource(postgres.database().dataSource()).schema(schema)
                .consumer(consumer).lanes(3).pollInterval(Duration.ofMillis(50)).handler("Seq", recordEffect())
                .build().start()) {
            for (String group : List.of(consumer, consumer + "-replay")) {
                try (KafkaInboxConsumer c = KafkaInboxConsumer.builder().bootstrapServers(kafka.bootstrapServers())
                        .groupId(group).consumer(consumer).topics(topic)
                        .dataSource(postgres.database().dataSource()).schema(schema).storeInInbox()
                        .afterStore(worker::nudge).pollTimeout(Duration.ofMillis(100)).build().start()) {
                    await().atMost(AWAIT).until(() -> c.stats().polled() >= 2L * events + 1);
                    await().atMost(AWAIT).until(() -> c.stats().batches() > 0 && postgres.database().queryLong(
                            "SELECT count(*) FROM inbox_event WHERE consumer = '" + consumer + "'") == events + 1);
                    if (!group.equals(consumer)) {
                        assertThat(c.stats().stored()).as("the replay stores nothing new").isZero();
                    }
                }
            }
            await().atMost(AWAIT).until(() -> effects(consumer) == events + 1);
        }
        assertThat(distinctEffects(consumer)).isEqualTo(events + 1);
        assertThat(postgres.database().queryLong("SELECT count(*) FROM inbox_event WHERE consumer = '" + consumer
                + "' AND state = 'PROCESSED' AND source_topic = '" + topic + "' AND source_offset IS NOT NULL"))
                .isEqualTo(events + 1);
    }

    private static String header(ConsumerRecord<byte[], byte[]> r, String name) {
        var h = r.headers().lastHeader(name);
        return h == null ? null : new String(h.value(), StandardCharsets.UTF_8);
    }

    private static List<ConsumerRecord<byte[], byte[]>> readAll(String topic, int expected) {
        Properties p = new Properties();
        p.put("bootstrap.servers", kafka.bootstrapServers());
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

}
