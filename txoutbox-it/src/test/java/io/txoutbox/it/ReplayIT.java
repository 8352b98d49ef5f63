package io.txoutbox.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.txoutbox.Outbox;
import io.txoutbox.OutboxMessage;
import io.txoutbox.RetryPolicy;
import io.txoutbox.OutboxAdmin;
import io.txoutbox.OutboxException;
import io.txoutbox.OutboxReplay;
import io.txoutbox.OutboxSchema;
import io.txoutbox.PollingRelay;
import io.txoutbox.kafka.KafkaHeaders;
import io.txoutbox.kafka.KafkaTransport;
import io.txoutbox.test.acceptance.FaultInjectingTransport;
import io.txoutbox.testing.history.HistoryAssert;
import io.txoutbox.testing.history.HistoryReport;
import io.txoutbox.testing.history.LedgerWriter;
import io.txoutbox.testing.kafka.KafkaBroker;
import io.txoutbox.testing.postgres.TestDatabase;
import io.txoutbox.testing.postgres.TestPostgres;
import io.txoutbox.testing.process.JvmProcess;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** Replay of published events, with the history checker on the target topic. */
class ReplayIT {

    private static final Logger log = LoggerFactory.getLogger(ReplayIT.class);

    private KafkaBroker kafka;
    private TestDatabase db;
    private OutboxSchema schema;

    @BeforeEach
    void setUp() {
        kafka = KafkaBroker.builder().start();
        kafka.createTopic("ledger", 6);
        kafka.createTopic("ledger-replay", 6);
        db = TestPostgres.shared().newDatabase("replay");
        schema = ItSupport.schema(db);
    }

    @AfterEach
    void tearDown() {
        if (db != null) {
            db.close();
        }
        if (kafka != null) {
            kafka.close();
        }
    }

    private long count(String where) {
        return db.queryLong("SELECT count(*) FROM " + schema.qualifiedOutboxTable() + " WHERE " + where);
    }

    private long replayed(String name) {
        return db.queryLong("SELECT coalesce(max(replayed), 0) FROM \"" + schema.schema() + "\".\""
                + schema.outboxTable() + "_replay\" WHERE name = '" + name + "'");
    }

    private JvmProcess replayProcess(String name, double maxRate) {
        TestPostgres pg = db.server();
        return JvmProcess.builder(ReplayProcessMain.class).name("replay").jvmArgs("-Xmx64m")
                .args(pg.jdbcUrl(), pg.user(), pg.password(), db.schema(), kafka.bootstrapServers(), name,
                        "ledger-replay", "1000", Double.toString(maxRate))
                .start();
    }

    @Test
    void a_hundred_thousand_events_replay_completely_in_key_order_resuming_after_a_sigkill() throws Exception {
        try (PollingRelay relay = PollingRelay.builder().dataSource(db.dataSource()).schema(schema)
                .transport(KafkaTransport.builder().bootstrapServers(kafka.bootstrapServers()).build())
                .build().start();
                LedgerWriter w = ItSupport.ledgerWriter(db, Outbox.builder().schema(schema)
                        .afterPublish(relay::nudge).build(), "ledger").threads(4).keys(500).events(100_000).eventsPerTransaction(20)
                        .rollbackShare(0.02).build().start()) {
            assertThat(w.awaitDone(Duration.ofMinutes(5))).isTrue();
            assertThat(w.errors()).isEmpty();
            await().atMost(Duration.ofMinutes(3)).until(() -> count("state = 'PENDING'") == 0);
        }
        long published = count("state = 'PUBLISHED'");
        assertThat(published).isGreaterThan(95_000);

        JvmProcess first = replayProcess("rebuild", 20_000); // slow enough to be killed half way
        await().atMost(Duration.ofMinutes(2)).pollInterval(Duration.ofMillis(100))
                .until(() -> replayed("rebuild") >= 20_000);
        first.kill();
        first.awaitExit(Duration.ofSeconds(30));
        long atKill = replayed("rebuild");
        assertThat(atKill).as("killed half way").isLessThan(published);

        try (JvmProcess second = replayProcess("rebuild", 0)) {
            String result = second.awaitLine("REPLAY-RESULT .*", Duration.ofMinutes(3));
            log.info("replay after the kill at {} events: {}", atKill, result);
            assertThat(second.awaitExit(Duration.ofSeconds(30))).isZero();
            assertThat(result).contains("done=true", "replayed=" + published, "skipped=0", "heapMaxMiB=");
        }
        first.close();

        HistoryReport report = ItSupport.check(db, kafka.bootstrapServers(), "ledger-replay", Duration.ofMinutes(2));
        HistoryAssert.assertThat(report).isClean();
        assertThat(report.duplicates()).as("at most the page in flight at the kill").isLessThanOrEqualTo(1_000);
        assertThat(count("state = 'PUBLISHED'")).as("the live stream's rows are untouched").isEqualTo(published);

        ConsumerRecord<byte[], byte[]> one = firstRecord("ledger-replay");
        assertThat(new String(one.headers().lastHeader(KafkaHeaders.REPLAY).value(), StandardCharsets.UTF_8))
                .isEqualTo("rebuild");

        OutboxReplay sameNameOtherFilter = OutboxReplay.builder().dataSource(db.dataSource()).schema(schema)
                .transport(KafkaTransport.builder().bootstrapServers(kafka.bootstrapServers()).build())
                .name("rebuild").toTopic("ledger-replay").eventType("Seq").build();
        assertThatThrownBy(sameNameOtherFilter::run).isInstanceOf(OutboxException.class)
                .hasMessageContaining("another filter");
    }

    // ---- rows that are not published yet ---------------------------------------------------------------------

    /** The key whose first event the relay parks; its later events wait behind it. */
    private static final String PARKED = "k-parked";
    private static final int KEYS = 10;
    private static final int PER_KEY = 5;

    private final AtomicBoolean parkedKeyFails = new AtomicBoolean(true);

    /** A relay whose transport fails every event of {@link #PARKED} while {@link #parkedKeyFails} is set. */
    private PollingRelay relayParkingOneKey() {
        return PollingRelay.builder().dataSource(db.dataSource()).schema(schema).pollInterval(Duration.ofMillis(50))
                .retry(RetryPolicy.defaults().withMaxAttempts(2).withBackoff(Duration.ofMillis(50),
                        Duration.ofMillis(50)))
                .transport(new FaultInjectingTransport(
                        KafkaTransport.builder().bootstrapServers(kafka.bootstrapServers()).build(),
                        r -> parkedKeyFails.get() && PARKED.equals(r.key())))
                .build().start();
    }

    private static OutboxMessage event(String key, int seq) {
        return OutboxMessage.builder().topic("ledger").aggregate("Key", key).eventType("Seq").aggregateVersion(seq)
                .jsonPayload("{\"key\":\"" + key + "\",\"seq\":" + seq + "}").build();
    }

    /** Writes {@link #PER_KEY} events for each of {@link #KEYS} keys and for {@link #PARKED}, interleaved. */
    private List<UUID> writeKeysAndTheParkedOne(Outbox outbox) throws Exception {
        List<UUID> parkedIds = new ArrayList<>();
        try (Connection c = db.connect()) {
            c.setAutoCommit(false);
            for (int seq = 1; seq <= PER_KEY; seq++) {
                for (int k = 0; k < KEYS; k++) {
                    outbox.publish(c, event("k" + k, seq));
                }
                parkedIds.add(outbox.publish(c, event(PARKED, seq)).get(0));
                c.commit();
            }
        }
        return parkedIds;
    }

    private OutboxReplay.Builder replay(String name) {
        return OutboxReplay.builder().dataSource(db.dataSource()).schema(schema)
                .transport(KafkaTransport.builder().bootstrapServers(kafka.bootstrapServers()).build())
                .name(name).toTopic("ledger-replay");
    }

    private OutboxReplay.Builder replay(String name, OutboxReplay.WhenUnpublished mode, Duration waitTimeout) {
        return replay(name).whenUnpublished(mode).waitTimeout(waitTimeout);
    }

    /** Writes the keys and the parked one, and waits until everything but the parked key's events is published. */
    private List<UUID> parkOneKey(PollingRelay relay) throws Exception {
        List<UUID> parkedIds = writeKeysAndTheParkedOne(Outbox.builder().schema(schema)
                .afterPublish(relay::nudge).build());
        await().atMost(Duration.ofMinutes(1)).until(() -> count("state = 'PUBLISHED'") == KEYS * PER_KEY
                && count("state = 'PARKED'") == 1);
        return parkedIds;
    }

    @Test
    void with_wait_a_replay_stops_at_a_parked_key_and_after_the_requeue_delivers_its_events_in_order()
            throws Exception {
        try (PollingRelay relay = relayParkingOneKey()) {
            List<UUID> parkedIds = parkOneKey(relay);
            long headId = db.queryLong("SELECT id FROM " + schema.qualifiedOutboxTable() + " WHERE event_id = '"
                    + parkedIds.get(0) + "'");

            // a bounded wait: it runs out with the event it waits for, the progress kept right before it
            OutboxReplay.Result timedOut = replay("rebuild-wait", OutboxReplay.WhenUnpublished.WAIT,
                    Duration.ofSeconds(2)).build().run();
            log.info("wait that ran out: {}", timedOut);
            assertThat(timedOut.outcome()).isEqualTo(OutboxReplay.Outcome.WAIT_TIMED_OUT);
            assertThat(timedOut.done()).isFalse();
            assertThat(timedOut.waitingFor().eventId()).isEqualTo(parkedIds.get(0));
            assertThat(timedOut.waitingFor().state()).isEqualTo("PARKED");
            assertThat(timedOut.lastId()).isEqualTo(headId - 1);
            assertThat(timedOut.replayed()).as("the events before the parked one").isEqualTo(KEYS);
            assertThat(timedOut.skipped()).isZero();

            // resumed, it waits at the parked event until an operator requeues it and the relay publishes it
            OutboxReplay resumed = replay("rebuild-wait", OutboxReplay.WhenUnpublished.WAIT, Duration.ofMinutes(2))
                    .build();
            CompletableFuture<OutboxReplay.Result> run = CompletableFuture.supplyAsync(resumed::run);
            parkedKeyFails.set(false);
            assertThat(OutboxAdmin.create(db.dataSource(), schema).requeue(parkedIds.get(0), "replay-test"))
                    .isTrue();
            relay.nudge();
            OutboxReplay.Result result = run.get(3, TimeUnit.MINUTES);
            log.info("wait after the requeue: {}", result);
            assertThat(result.outcome()).isEqualTo(OutboxReplay.Outcome.DONE);
            assertThat(result.replayed()).isEqualTo((KEYS + 1) * PER_KEY);
            assertThat(result.skipped()).isZero();
            assertThat(result.skippedEvents()).isEmpty();
        }
        Map<String, List<UUID>> byKey = readByKey("ledger-replay", (KEYS + 1) * PER_KEY);
        assertThat(byKey.get(PARKED)).as("the parked key's events, in order, once each")
                .isEqualTo(eventIdsOfKey(PARKED));
        for (int k = 0; k < KEYS; k++) {
            assertThat(byKey.get("k" + k)).as("key k%d in order, once each", k).isEqualTo(eventIdsOfKey("k" + k));
        }
    }

    @Test
    void with_report_a_replay_over_a_parked_key_lists_exactly_the_keys_unpublished_events() throws Exception {
        try (PollingRelay relay = relayParkingOneKey()) {
            List<UUID> parkedIds = parkOneKey(relay);
            OutboxReplay.Result result = replay("rebuild-report", OutboxReplay.WhenUnpublished.REPORT,
                    Duration.ofMinutes(2)).build().run();
            log.info("report: {}", result);
            assertThat(result.outcome()).isEqualTo(OutboxReplay.Outcome.DONE);
            assertThat(result.replayed()).isEqualTo(KEYS * PER_KEY);
            assertThat(result.skipped()).isEqualTo(PER_KEY);
            assertThat(result.skippedEvents()).extracting(OutboxReplay.Skipped::eventId)
                    .containsExactlyElementsOf(parkedIds);
            assertThat(result.skippedEvents()).extracting(OutboxReplay.Skipped::state)
                    .containsExactly("PARKED", "PENDING", "PENDING", "PENDING", "PENDING");
            assertThat(result.skippedEvents()).extracting(OutboxReplay.Skipped::reason)
                    .containsOnly(OutboxReplay.SkipReason.NOT_PUBLISHED);
            assertThat(result.skippedEvents()).extracting(OutboxReplay.Skipped::topic).containsOnly("ledger");
            OutboxReplay.Result stored = replay("rebuild-report").build().progress();
            assertThat(stored.done()).isTrue();
            assertThat(stored.skipped()).as("the count is kept with the progress").isEqualTo(PER_KEY);
        }
        Map<String, List<UUID>> byKey = readByKey("ledger-replay", KEYS * PER_KEY);
        assertThat(byKey).doesNotContainKey(PARKED);
    }

    @Test
    void an_event_committed_late_below_the_end_of_the_range_is_replayed() throws Exception {
        try (PollingRelay relay = PollingRelay.builder().dataSource(db.dataSource()).schema(schema)
                .pollInterval(Duration.ofMillis(50))
                .transport(KafkaTransport.builder().bootstrapServers(kafka.bootstrapServers()).build())
                .build().start(); Connection late = db.connect()) {
            Outbox outbox = Outbox.builder().schema(schema).afterPublish(relay::nudge).build();
            late.setAutoCommit(false);
            UUID lateId = outbox.publish(late, event("k-late", 1)).get(0); // its id is drawn now, it commits last
            try (Connection c = db.connect()) {
                c.setAutoCommit(false);
                for (int k = 0; k < KEYS * PER_KEY; k++) {
                    outbox.publish(c, event("k" + k % KEYS, k / KEYS + 1));
                }
                c.commit();
            }
            await().atMost(Duration.ofMinutes(1)).until(() -> count("state = 'PUBLISHED'") == KEYS * PER_KEY);

            // the writer that may still commit an id of the range keeps the replay from starting; bounded
            OutboxReplay.Result timedOut = replay("late", OutboxReplay.WhenUnpublished.REPORT, Duration.ofSeconds(1))
                    .build().run();
            log.info("replay while a writer of the range is open: {}", timedOut);
            assertThat(timedOut.outcome()).isEqualTo(OutboxReplay.Outcome.WAIT_TIMED_OUT);
            assertThat(timedOut.waitingFor()).isNull();
            assertThat(timedOut.replayed()).isZero();

            OutboxReplay replay = replay("late", OutboxReplay.WhenUnpublished.WAIT, Duration.ofMinutes(2)).build();
            CompletableFuture<OutboxReplay.Result> run = CompletableFuture.supplyAsync(replay::run);
            await().atMost(Duration.ofMinutes(1)).until(() -> replay.progress() != null);
            assertThat(run).as("waits for the open writer").isNotDone();
            late.commit();
            OutboxReplay.Result result = run.get(2, TimeUnit.MINUTES);
            log.info("replay with a late commit of {}: {}", lateId, result);
            assertThat(result.done()).isTrue();
            assertThat(result.replayed()).as("the late event too").isEqualTo(KEYS * PER_KEY + 1);
        }
        assertThat(readByKey("ledger-replay", KEYS * PER_KEY + 1)).containsKey("k-late");
    }

    /** The outbox's event ids of a key, in outbox (id) order. */
    private List<UUID> eventIdsOfKey(String key) {
        List<UUID> out = new ArrayList<>();
        try (Connection c = db.connect(); var ps = c.prepareStatement("SELECT event_id FROM "
                + schema.qualifiedOutboxTable() + " WHERE partition_key = ? ORDER BY id")) {
            ps.setString(1, key);
            try (var rs = ps.executeQuery()) {
                while (rs.next()) {
                    out.add((UUID) rs.getObject(1));
                }
            }
        } catch (java.sql.SQLException e) {
            throw new IllegalStateException(e);
        }
        return out;
    }

    /** Reads the topic from the start until {@code expected} records came, then a little longer; event ids by key. */
    private Map<String, List<UUID>> readByKey(String topic, int expected) {
        Properties p = new Properties();
        p.put("bootstrap.servers", kafka.bootstrapServers());
        p.put("isolation.level", "read_committed");
        Map<String, List<UUID>> byKey = new TreeMap<>();
        int seen = 0;
        try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(p, new ByteArrayDeserializer(),
                new ByteArrayDeserializer())) {
            List<TopicPartition> parts = c.partitionsFor(topic).stream()
                    .map(i -> new TopicPartition(topic, i.partition())).toList();
            c.assign(parts);
            c.seekToBeginning(parts);
            long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
            int emptyPollsAfter = 0;
            while (System.nanoTime() < deadline && (seen < expected || emptyPollsAfter < 3)) {
                var records = c.poll(Duration.ofMillis(300));
                if (records.isEmpty() && seen >= expected) {
                    emptyPollsAfter++; // anything beyond the expected records (a duplicate) would show now
                }
                for (ConsumerRecord<byte[], byte[]> r : records) {
                    seen++;
                    byKey.computeIfAbsent(new String(r.key(), StandardCharsets.UTF_8), k -> new ArrayList<>())
                            .add(UUID.fromString(new String(r.headers().lastHeader(KafkaHeaders.EVENT_ID).value(),
                                    StandardCharsets.UTF_8)));
                }
            }
        }
        assertThat(seen).as("records on %s", topic).isEqualTo(expected);
        return byKey;
    }

    private ConsumerRecord<byte[], byte[]> firstRecord(String topic) {
        Properties p = new Properties();
        p.put("bootstrap.servers", kafka.bootstrapServers());
        p.put("isolation.level", "read_committed");
        try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(p, new ByteArrayDeserializer(),
                new ByteArrayDeserializer())) {
            List<TopicPartition> parts = c.partitionsFor(topic).stream()
                    .map(i -> new TopicPartition(topic, i.partition())).toList();
            c.assign(parts);
            c.seekToBeginning(parts);
            long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
            while (System.nanoTime() < deadline) {
                for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(200))) {
                    return r;
                }
            }
        }
        throw new AssertionError("nothing on " + topic);
    }
}
