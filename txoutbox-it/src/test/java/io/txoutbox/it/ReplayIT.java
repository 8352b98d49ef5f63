package io.txoutbox.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.txoutbox.Outbox;
import io.txoutbox.OutboxMessage;
import io.txoutbox.RetryPolicy;
import io.txoutbox.OutboxException;
import io.txoutbox.OutboxReplay;
import io.txoutbox.OutboxSchema;
import io.txoutbox.PollingRelay;
import io.txoutbox.kafka.KafkaHeaders;
import io.txoutbox.kafka.KafkaTransport;
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
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.Properties;
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

    @Test
    void a_replay_over_a_parked_key_does_not_report_done_without_the_keys_events() throws Exception {
        try (PollingRelay relay = relayParkingOneKey()) {
            writeKeysAndTheParkedOne(Outbox.builder().schema(schema).afterPublish(relay::nudge).build());
            await().atMost(Duration.ofMinutes(1)).until(() -> count("state = 'PUBLISHED'") == KEYS * PER_KEY
                    && count("state = 'PARKED'") == 1);
            OutboxReplay.Result result = replay("parked").build().run();
            log.info("replay over a parked key: {}", result);
            assertThat(result.replayed() + result.skipped()).as("every event of the range is replayed or reported")
                    .isEqualTo((KEYS + 1) * PER_KEY);
        }
    }

    @Test
    void an_event_committed_late_below_the_end_of_the_range_is_replayed() throws Exception {
        try (PollingRelay relay = PollingRelay.builder().dataSource(db.dataSource()).schema(schema)
                .pollInterval(Duration.ofMillis(50))
                .transport(KafkaTransport.builder().bootstrapServers(kafka.bootstrapServers()).build())
                .build().start(); Connection late = db.connect()) {
            Outbox outbox = Outbox.builder().schema(schema).afterPublish(relay::nudge).build();
            late.setAutoCommit(false);
            UUID lateId = outbox.publish(late, event("k-late", 1)).get(0); // its id is drawn now, it commits at the end
            try (Connection c = db.connect()) {
                c.setAutoCommit(false);
                for (int k = 0; k < KEYS * PER_KEY; k++) {
                    outbox.publish(c, event("k" + k % KEYS, k / KEYS + 1));
                }
                c.commit();
            }
            await().atMost(Duration.ofMinutes(1)).until(() -> count("state = 'PUBLISHED'") == KEYS * PER_KEY);
            OutboxReplay replay = replay("late").build();
            CompletableFuture<OutboxReplay.Result> run = CompletableFuture.supplyAsync(replay::run);
            await().atMost(Duration.ofMinutes(1)).until(() -> replay.progress() != null);
            late.commit();
            OutboxReplay.Result result = run.get(2, TimeUnit.MINUTES);
            log.info("replay with a late commit of {}: {}", lateId, result);
            assertThat(result.done()).isTrue();
            assertThat(result.replayed()).as("the late event too").isEqualTo(KEYS * PER_KEY + 1);
        }
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
