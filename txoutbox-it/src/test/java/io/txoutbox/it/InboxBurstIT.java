package io.txoutbox.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.txoutbox.InboxHandler;
import io.txoutbox.InboxWorker;
import io.txoutbox.OutboxSchema;
import io.txoutbox.kafka.KafkaHeaders;
import io.txoutbox.kafka.KafkaInboxConsumer;
import io.txoutbox.testing.kafka.KafkaBroker;
import io.txoutbox.testing.postgres.TestDatabase;
import io.txoutbox.testing.postgres.TestPostgres;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.Semaphore;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A burst of 50,000 events, 500 keys over 4 partitions, arrives while a {@link KafkaInboxConsumer} in store mode
 * feeds an {@link InboxWorker} whose handler does 5 ms of slow work per event. The receiver must take in the whole
 * topic (its committed offsets at the end offsets) while the worker is held back: until the receiver is there, the
 * handler handles at most {@value #HANDLED_BEFORE_RECEIVED} events and then waits. A receiver paced by the handler
 * (handling inline, or stopping at a bounded backlog) would never get to the end offsets and the test fails at the
 * deadline; the verdict does not depend on how fast this machine is. Then the inbox drains: every event's effect
 * exactly once, per key in sequence order.
 */
class InboxBurstIT {

    private static final Logger log = LoggerFactory.getLogger(InboxBurstIT.class);
    private static final int EVENTS = 50_000;
    private static final int KEYS = 500;
    private static final int PARTITIONS = 4;
    private static final long HANDLER_MILLIS = 5;
    /** 50,000 × 5 ms over 8 lanes ≈ 31 s of drain. */
    private static final int LANES = 8;
    /** The handler's events before the receiver is at the end offsets: a fifth of the burst, ≈ 6 s of work. */
    private static final int HANDLED_BEFORE_RECEIVED = EVENTS / 5;

    private KafkaBroker kafka;
    private TestDatabase db;
    private OutboxSchema schema;

    @BeforeEach
    void setUp() {
        kafka = KafkaBroker.shared();
        db = TestPostgres.shared().newDatabase("inbox_burst");
        schema = ItSupport.schema(db);
        // event_id as primary key: a second effect of one event fails its handler instead of passing unnoticed
        db.execute("CREATE TABLE effect (event_id uuid PRIMARY KEY, applied bigserial NOT NULL, k text NOT NULL,"
                + " seq bigint NOT NULL)");
    }

    @AfterEach
    void tearDown() {
        db.close();
    }

    @Test
    void the_receiver_keeps_up_with_a_burst_while_a_slow_worker_lags_and_the_inbox_then_drains_exactly_once_in_key_order()
            throws Exception {
        String topic = "burst-" + UUID.randomUUID();
        String consumer = "burst-" + UUID.randomUUID();
        kafka.createTopic(topic, PARTITIONS);
        Semaphore beforeReceived = new Semaphore(HANDLED_BEFORE_RECEIVED);
        AtomicBoolean received = new AtomicBoolean();
        InboxHandler slowEffect = (c, e) -> {
            if (!received.get()) {
                beforeReceived.acquire(); // past the allowance a lane waits here until the receiver is at the end
            }
            Thread.sleep(HANDLER_MILLIS); // the handler's slow work (a remote call, say); not a wait for anything
            try (PreparedStatement ps = c.prepareStatement("INSERT INTO effect (event_id, k, seq) VALUES (?, ?, ?)")) {
                ps.setObject(1, e.eventId());
                ps.setString(2, e.key());
                ps.setLong(3, e.aggregateVersion());
                ps.executeUpdate();
            }
        };
        Properties adminProps = new Properties();
        adminProps.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers());
        long started = System.nanoTime();
        try (Admin admin = Admin.create(adminProps);
                InboxWorker worker = InboxWorker.builder().dataSource(db.dataSource()).schema(schema)
                        .consumer(consumer).name("burst").lanes(LANES).pollInterval(Duration.ofMillis(100))
                        // a held-back lane waits in its handler for up to the receiver's deadline
                        .handlerTimeout(Duration.ofMinutes(3)).leaseTimeout(Duration.ofMinutes(6))
                        .handler("Seq", slowEffect).build().start();
                KafkaInboxConsumer receiver = KafkaInboxConsumer.builder()
                        .bootstrapServers(kafka.bootstrapServers()).groupId(consumer).topics(topic)
                        .dataSource(db.dataSource()).schema(schema).storeInInbox().afterStore(worker::nudge)
                        // the test's data source is unpooled (a new connection per poll): fewer, larger polls keep
                        // that harness cost from pacing the receiver on a loaded machine
                        .property("max.poll.records", 2_000)
                        .pollTimeout(Duration.ofMillis(100)).build().start()) {
            Set<UUID> sent = produceBurst(topic);
            Map<TopicPartition, Long> end = endOffsets(admin, topic);
            assertThat(end.values().stream().mapToLong(Long::longValue).sum()).as("records on the topic")
                    .isEqualTo(EVENTS);

            await("the receiver's committed offsets at the topic's end offsets, the worker held back")
                    .atMost(Duration.ofMinutes(2))
                    .pollInterval(Duration.ofMillis(50))
                    .until(() -> committedOffsets(admin, consumer).equals(end));
            // read after the offsets got there: the effects at that moment were at most this many
            long processedWhenReceived = effects();
            long storedWhenReceived = db.queryLong("SELECT count(*) FROM inbox_event WHERE consumer = '" + consumer
                    + "'");
            log.info("receiver at the end offsets after {} ms: {} events stored, {} processed by the worker",
                    (System.nanoTime() - started) / 1_000_000, storedWhenReceived, processedWhenReceived);
            assertThat(storedWhenReceived).as("every committed record is in the inbox").isEqualTo(EVENTS);
            assertThat(receiver.stats().stored()).isEqualTo(EVENTS);
            received.set(true);
            beforeReceived.release(LANES); // the lanes waiting at the allowance go on
            await("the inbox drained").atMost(Duration.ofMinutes(3)).pollInterval(Duration.ofMillis(200))
                    .failFast("an event failed in the worker (a duplicate effect would)",
                            () -> worker.stats().failedAttempts() > 0)
                    .until(() -> db.queryLong("SELECT count(*) FROM inbox_event WHERE consumer = '" + consumer
                            + "' AND state = 'PROCESSED'") == EVENTS);
            log.info("inbox drained after {} ms; {}", (System.nanoTime() - started) / 1_000_000, worker.stats());

            assertThat(effects()).as("one effect per event").isEqualTo(EVENTS);
            Set<UUID> applied = appliedEventIds();
            Set<UUID> lost = new HashSet<>(sent);
            lost.removeAll(applied);
            Set<UUID> phantom = new HashSet<>(applied);
            phantom.removeAll(sent);
            assertThat(lost).as("events sent but never applied").isEmpty();
            assertThat(phantom).as("effects of events never sent").isEmpty();
            assertThat(db.queryLong("SELECT count(*) FROM (SELECT seq, row_number() OVER (PARTITION BY k ORDER BY"
                    + " applied) AS n FROM effect) x WHERE seq <> n"))
                    .as("effects of a key not applied in sequence order 1, 2, 3, …").isZero();
            assertThat(db.queryLong("SELECT count(DISTINCT k) FROM effect")).isEqualTo(KEYS);
        }
    }

    /** EVENTS events, key k0…k499 round robin, sequence 1.. per key in the aggregate_version header. */
    private Set<UUID> produceBurst(String topic) {
        Properties p = new Properties();
        p.put("bootstrap.servers", kafka.bootstrapServers());
        p.put("key.serializer", ByteArraySerializer.class.getName());
        p.put("value.serializer", ByteArraySerializer.class.getName());
        p.put("linger.ms", "5");
        Set<UUID> ids = new HashSet<>();
        int[] seq = new int[KEYS];
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(p)) {
            for (int i = 0; i < EVENTS; i++) {
                int k = i % KEYS;
                String key = "k" + k;
                UUID id = UUID.randomUUID();
                ids.add(id);
                int s = ++seq[k];
                ProducerRecord<byte[], byte[]> r = new ProducerRecord<>(topic, utf8(key),
                        utf8("{\"key\":\"" + key + "\",\"seq\":" + s + "}"));
                r.headers().add(KafkaHeaders.EVENT_ID, utf8(id.toString()));
                r.headers().add(KafkaHeaders.EVENT_TYPE, utf8("Seq"));
                r.headers().add(KafkaHeaders.AGGREGATE_TYPE, utf8("Key"));
                r.headers().add(KafkaHeaders.AGGREGATE_ID, utf8(key));
                r.headers().add(KafkaHeaders.AGGREGATE_VERSION, utf8(Integer.toString(s)));
                producer.send(r);
            }
            producer.flush();
        }
        return ids;
    }

    private static Map<TopicPartition, Long> endOffsets(Admin admin, String topic) throws Exception {
        Map<TopicPartition, OffsetSpec> latest = IntStream.range(0, PARTITIONS).boxed()
                .collect(Collectors.toMap(p -> new TopicPartition(topic, p), p -> OffsetSpec.latest()));
        Map<TopicPartition, Long> end = new HashMap<>();
        admin.listOffsets(latest).all().get().forEach((tp, info) -> end.put(tp, info.offset()));
        return end;
    }

    private static Map<TopicPartition, Long> committedOffsets(Admin admin, String group) throws Exception {
        Map<TopicPartition, Long> committed = new HashMap<>();
        for (Map.Entry<TopicPartition, OffsetAndMetadata> e : admin.listConsumerGroupOffsets(group)
                .partitionsToOffsetAndMetadata().get().entrySet()) {
            if (e.getValue() != null) {
                committed.put(e.getKey(), e.getValue().offset());
            }
        }
        return committed;
    }

    private long effects() {
        return db.queryLong("SELECT count(*) FROM effect");
    }

    private Set<UUID> appliedEventIds() throws Exception {
        Set<UUID> ids = new HashSet<>();
        try (Connection c = db.connect(); Statement st = c.createStatement();
                ResultSet rs = st.executeQuery("SELECT event_id FROM effect")) {
            while (rs.next()) {
                ids.add((UUID) rs.getObject(1));
            }
        }
        return ids;
    }

    private static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }
}
