package io.txoutbox.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.txoutbox.Outbox;
import io.txoutbox.OutboxMessage;
import io.txoutbox.OutboxSchema;
import io.txoutbox.PollingRelay;
import io.txoutbox.RetryPolicy;
import io.txoutbox.kafka.KafkaHeaders;
import io.txoutbox.kafka.KafkaTransport;
import io.txoutbox.testing.kafka.KafkaBroker;
import io.txoutbox.testing.postgres.TestDatabase;
import io.txoutbox.testing.postgres.TestPostgres;
import io.txoutbox.testing.postgres.TestSession;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One partition that fails retriably shares a lane with 500 healthy events: a topic with replicas on brokers 1 and 2
 * and {@code min.insync.replicas=2}, broker 2 stopped, so its ISR is [1] and every {@code acks=all} write gets
 * NOT_ENOUGH_REPLICAS until the delivery timeout. (Replication factor 1 with {@code min.insync.replicas=2} does not
 * fail on Kafka 4: the broker bounds the effective minimum by the replica count.)
 * After the first batch that meets it, the healthy events' commit→read latency stays low for the whole window; when
 * the topic heals, its event is delivered within the bound below. Both Kafka modes.
 */
class SickPartitionIT {

    private static final Logger log = LoggerFactory.getLogger(SickPartitionIT.class);
    /** The issue asks for 30 s; 20 s per mode keeps both modes within the suite's budget. */
    private static final Duration WINDOW = Duration.ofSeconds(20);
    private static final int HEALTHY_EVENTS = 500;
    /**
     * The healthy events' p99 bound: what it guards against measured 8,777 ms (IDEMPOTENT, every flush waiting the
     * sick record's delivery timeout) and 47,271 ms with none read (TRANSACTIONAL), against 42–1,376 ms for the fixed
     * relay on a quiet machine. 2 s until 2026-12-04, when the CI run (two test JVMs in this module beside another
     * module's) measured 2,559 ms in TRANSACTIONAL mode; that mode's commit per batch alone misses 2 s on a saturated
     * machine (RELIABILITY.md, "one sick partition").
     */
    private static final long P99_LIMIT_MS = 5_000;
    /** The relay's longest outage pause, which is also the longest backoff of a key whose partition is sick. */
    private static final Duration OUTAGE_BACKOFF_MAX = Duration.ofSeconds(2);
    /**
     * From the topic's healing to the sick event in the topic: one metadata check of the quarantine (every 500 ms),
     * then at most one key backoff ({@link #OUTAGE_BACKOFF_MAX}), plus 1 s for the batch and the read.
     */
    private static final long HEAL_BOUND_MS = 500 + OUTAGE_BACKOFF_MAX.toMillis() + 1_000;

    private static KafkaBroker kafka;
    private TestDatabase db;
    private OutboxSchema schema;
    /**
     * The test's one session for its writes and reads: a new connection per event cost PostgreSQL a backend start
     * each (596 sessions for this test in a CI run of 2026-12-04), CPU taken from the relay under test.
     */
    private TestSession session;
    private String sickTopic;
    private String healthyTopic;

    /** Both modes' sick topics, made while broker 2 runs; it stops before any test starts. */
    @BeforeAll
    static void brokers() throws Exception {
        kafka = KafkaBroker.builder().property("auto.create.topics.enable", "false").start();
        KafkaBroker second = KafkaBroker.builder().joining(kafka, 2).start();
        try (Admin admin = admin()) {
            for (KafkaTransport.Mode mode : KafkaTransport.Mode.values()) {
                admin.createTopics(List.of(new NewTopic(sickTopic(mode), Map.of(0, List.of(1, 2)))
                        .configs(Map.of("min.insync.replicas", "2")))).all().get(30, TimeUnit.SECONDS);
            }
            second.close();
            // broker 2's controlled shutdown takes it out of the ISR: [1] < min.insync.replicas from now on
            await().atMost(Duration.ofSeconds(30)).until(() -> admin.describeTopics(
                    List.of(sickTopic(KafkaTransport.Mode.TRANSACTIONAL), sickTopic(KafkaTransport.Mode.IDEMPOTENT)))
                    .allTopicNames().get().values().stream()
                    .allMatch(d -> d.partitions().get(0).isr().size() == 1 && d.partitions().get(0).leader() != null
                            && d.partitions().get(0).leader().id() == 1));
        }
    }

    @AfterAll
    static void stopBroker() {
        kafka.close();
    }

    private static String sickTopic(KafkaTransport.Mode mode) {
        return "sick-" + mode.name().toLowerCase();
    }

    private static Admin admin() {
        return Admin.create(Map.of("bootstrap.servers", kafka.bootstrapServers()));
    }

    @BeforeEach
    void setUp() throws Exception {
        db = TestPostgres.shared().newDatabase("sick_partition");
        schema = ItSupport.schema(db);
        session = db.session();
        healthyTopic = "healthy-" + UUID.randomUUID().toString().substring(0, 8);
        try (Admin admin = admin()) { // on broker 1, which stays up
            admin.createTopics(List.of(new NewTopic(healthyTopic, Map.of(0, List.of(1), 1, List.of(1), 2,
                    List.of(1))))).all().get(30, TimeUnit.SECONDS);
        }
    }

    @AfterEach
    void tearDown() throws Exception {
        db.close(); // and the test's session
    }

    private long queryLong(String sql) {
        return session.queryLong(sql);
    }

    @ParameterizedTest
    @EnumSource(KafkaTransport.Mode.class)
    void one_sick_partition_backs_off_its_keys_and_the_rest_of_the_lane_flows(KafkaTransport.Mode mode)
            throws Exception {
        sickTopic = sickTopic(mode);
        KafkaTransport transport = KafkaTransport.builder().bootstrapServers(kafka.bootstrapServers()).mode(mode)
                .build();
        Map<UUID, Long> committedAt = new ConcurrentHashMap<>();
        Map<UUID, Long> readAt = new ConcurrentHashMap<>();
        AtomicBoolean reading = new AtomicBoolean(true);
        Thread reader = new Thread(() -> read(List.of(healthyTopic, sickTopic), readAt, reading), "sick-reader");
        reader.start();
        try (PollingRelay relay = PollingRelay.builder().dataSource(db.dataSource()).schema(schema)
                .name("sick-" + mode.name().toLowerCase()).transport(transport).lanes(1).batchSize(200)
                .pollInterval(Duration.ofMillis(50)).outageBackoffMax(OUTAGE_BACKOFF_MAX)
                .retry(RetryPolicy.defaults().withBackoff(Duration.ofMillis(100), Duration.ofSeconds(2)))
                .build().start()) {
            Outbox outbox = Outbox.builder().schema(schema).afterPublish(relay::nudge).build();
            // the sick event and a few healthy ones in one transaction: the first batch meets the sick partition
            List<OutboxMessage> first = new ArrayList<>();
            first.add(message(sickTopic, "sick-key", 1));
            for (int k = 0; k < 6; k++) {
                first.add(message(healthyTopic, "h-" + k, 0));
            }
            UUID sickEvent = write(outbox, first).get(0);
            long startedAt = System.nanoTime();
            await().atMost(Duration.ofSeconds(40)).pollInterval(Duration.ofMillis(20))
                    .until(() -> queryLong("SELECT count(*) FROM " + schema.qualifiedOutboxTable()
                            + " WHERE event_id = '" + sickEvent + "' AND last_error IS NOT NULL") == 1);
            log.info("{}: the first batch that met the sick partition ended after {} ms", mode,
                    TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - startedAt));

            // 500 healthy events at a steady rate over the window, 50 keys, one transaction each
            long windowStart = System.nanoTime();
            long spacingNanos = WINDOW.toNanos() / HEALTHY_EVENTS;
            for (int i = 0; i < HEALTHY_EVENTS; i++) {
                long due = windowStart + i * spacingNanos;
                long wait = due - System.nanoTime();
                if (wait > 0) {
                    TimeUnit.NANOSECONDS.sleep(wait);
                }
                UUID id = write(outbox, List.of(message(healthyTopic, "h-" + (i % 50), i / 50 + 1))).get(0);
                committedAt.put(id, System.nanoTime());
            }
            long drainDeadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(15);
            while (!readAt.keySet().containsAll(committedAt.keySet()) && System.nanoTime() < drainDeadline) {
                Thread.sleep(20);
            }
            // an event not read by now counts with its age so far (a lower bound of its latency)
            long now = System.nanoTime();
            List<Long> latencies = new ArrayList<>();
            int unread = 0;
            for (Map.Entry<UUID, Long> e : committedAt.entrySet()) {
                Long read = readAt.get(e.getKey());
                unread += read == null ? 1 : 0;
                latencies.add(TimeUnit.NANOSECONDS.toMillis((read == null ? now : read) - e.getValue()));
            }
            Collections.sort(latencies);
            long p50 = latencies.get(latencies.size() / 2);
            long p99 = latencies.get((int) Math.ceil(latencies.size() * 0.99) - 1);
            long max = latencies.get(latencies.size() - 1);
            log.info("{}: healthy commit→read over {} s: p50={} ms p99={} ms max={} ms, {} of {} not read", mode,
                    WINDOW.toSeconds(), p50, p99, max, unread, HEALTHY_EVENTS);
            assertThat(p99).as("healthy commit→read p99 (ms) while one partition of the lane is sick; p50=" + p50
                    + " ms, max=" + max + " ms, " + unread + " of " + HEALTHY_EVENTS + " not read")
                    .isLessThan(P99_LIMIT_MS);
            assertThat(readAt).as("the sick event is not delivered while its partition is sick")
                    .doesNotContainKey(sickEvent);
            assertThat(queryLong("SELECT attempts FROM " + schema.qualifiedOutboxTable() + " WHERE event_id = '"
                    + sickEvent + "' AND state = 'PENDING'")).as("the sick event waits without an attempt counted")
                    .isZero();

            // heal the topic: the sick event goes out within the bound
            alterMinInsyncReplicas(sickTopic, "1");
            long healedAt = System.nanoTime();
            await().atMost(Duration.ofSeconds(30)).until(() -> readAt.containsKey(sickEvent));
            long healMs = TimeUnit.NANOSECONDS.toMillis(readAt.get(sickEvent) - healedAt);
            log.info("{}: sick event read {} ms after the topic healed", mode, healMs);
            await().atMost(Duration.ofSeconds(10)).until(() -> queryLong("SELECT count(*) FROM "
                    + schema.qualifiedOutboxTable() + " WHERE state <> 'PUBLISHED'") == 0);

            assertThat(healMs).as("sick event delivered after the healing (ms)").isLessThan(HEAL_BOUND_MS);
        } finally {
            reading.set(false);
            reader.join(5_000);
            transport.close();
        }
    }

    private static OutboxMessage message(String topic, String key, long seq) {
        return OutboxMessage.builder().topic(topic).aggregate("Key", key).eventType("Seq").aggregateVersion(seq)
                .jsonPayload("{\"seq\":" + seq + "}").build();
    }

    private List<UUID> write(Outbox outbox, List<OutboxMessage> messages) throws Exception {
        Connection c = session.connection(); // the test's thread alone uses the session meanwhile
        c.setAutoCommit(false);
        try {
            List<UUID> ids = outbox.publish(c, messages.toArray(new OutboxMessage[0]));
            c.commit();
            return ids;
        } catch (Exception e) {
            c.rollback();
            throw e;
        } finally {
            c.setAutoCommit(true);
        }
    }

    private void read(List<String> topics, Map<UUID, Long> readAt, AtomicBoolean reading) {
        Map<String, Object> props = Map.of("bootstrap.servers", kafka.bootstrapServers(),
                "isolation.level", "read_committed", "enable.auto.commit", "false",
                "group.id", "sick-" + UUID.randomUUID());
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(props, new ByteArrayDeserializer(),
                new ByteArrayDeserializer())) {
            List<TopicPartition> partitions = new ArrayList<>();
            for (String t : topics) {
                consumer.partitionsFor(t).forEach(p -> partitions.add(new TopicPartition(t, p.partition())));
            }
            consumer.assign(partitions);
            consumer.seekToBeginning(partitions);
            while (reading.get()) {
                for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(20))) {
                    Header h = r.headers().lastHeader(KafkaHeaders.EVENT_ID);
                    readAt.putIfAbsent(UUID.fromString(new String(h.value(), StandardCharsets.UTF_8)),
                            System.nanoTime());
                }
            }
        }
    }

    private void alterMinInsyncReplicas(String topic, String value) throws Exception {
        try (Admin admin = admin()) {
            admin.incrementalAlterConfigs(Map.of(new ConfigResource(ConfigResource.Type.TOPIC, topic),
                    List.of(new AlterConfigOp(new ConfigEntry("min.insync.replicas", value),
                            AlterConfigOp.OpType.SET)))).all().get(30, TimeUnit.SECONDS);
        }
    }
}
