package io.txoutbox.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.txoutbox.Outbox;
import io.txoutbox.OutboxMessage;
import io.txoutbox.OutboxSchema;
import io.txoutbox.PollingRelay;
import io.txoutbox.kafka.KafkaTransport;
import io.txoutbox.testing.baseline.IdCursorRelay;
import io.txoutbox.testing.baseline.NaiveRelay;
import io.txoutbox.testing.history.HistoryAssert;
import io.txoutbox.testing.history.HistoryReport;
import io.txoutbox.testing.history.LedgerWriter;
import io.txoutbox.testing.kafka.KafkaBroker;
import io.txoutbox.testing.postgres.TestDatabase;
import io.txoutbox.testing.postgres.TestPostgres;
import java.sql.Connection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Proves the checks can fail: relays built the ways people usually build them lose events or break per-key order,
 * and the history checker says so — while txoutbox's relay, run three times in parallel on the same load, is clean.
 */
class KnownBadRelaysIT {

    private static final Duration WAIT = Duration.ofSeconds(60);
    private static KafkaBroker kafka;

    private TestDatabase db;
    private OutboxSchema schema;
    private String topic;

    @BeforeAll
    static void broker() {
        kafka = KafkaBroker.builder().start();
    }

    @AfterAll
    static void stopBroker() {
        kafka.close();
    }

    @BeforeEach
    void setUp() {
        db = TestPostgres.shared().newDatabase("known_bad");
        schema = ItSupport.schema(db);
        topic = "ledger-" + UUID.randomUUID().toString().substring(0, 8);
        kafka.createTopic(topic, 3);
    }

    @AfterEach
    void tearDown() {
        db.close();
    }

    @Test
    void an_id_cursor_relay_loses_the_transaction_that_commits_late() throws Exception {
        Outbox outbox = Outbox.builder().schema(schema).build();
        io.txoutbox.testing.history.Ledger.create(db.dataSource(), db.schema(), 3);
        try (IdCursorRelay cursor = new IdCursorRelay("cursor", db.dataSource(), schema.qualifiedOutboxTable(),
                kafka.bootstrapServers(), null)) {
            cursor.start();
            try (Connection late = db.connect(); Connection early = db.connect()) {
                late.setAutoCommit(false);
                early.setAutoCommit(false);
                insertLedgered(late, outbox, "k-0001", 1); // takes the lower id
                insertLedgered(early, outbox, "k-0002", 1);
                early.commit();
                await().atMost(WAIT).until(() -> cursor.sent() == 1); // the cursor moves past the late id
                late.commit();
            }
            // a third event committed after the late one: once it is sent, the cursor has polled past both
            try (Connection c = db.connect()) {
                c.setAutoCommit(false);
                insertLedgered(c, outbox, "k-0003", 1);
                c.commit();
            }
            await().atMost(WAIT).until(() -> cursor.sent() == 2);
        }
        // the relay sent two: read until those are there, then compare with the three that committed
        List<io.txoutbox.testing.history.Delivery> deliveries = io.txoutbox.testing.history.Verifier
                .builder(kafka.bootstrapServers(), topic).expectedEvents(2).deadline(WAIT).build().readAll();
        HistoryReport report = io.txoutbox.testing.history.HistoryChecker.check(
                io.txoutbox.testing.history.Ledger.read(db.dataSource(), db.schema()), deliveries);
        assertThat(report.committed()).isEqualTo(3);
        assertThat(report.lost()).as(report.summaryLine()).isEqualTo(1);
    }

    /** A committed ledger entry and its outbox event, as the ledger writer would write them. */
    private void insertLedgered(Connection c, Outbox outbox, String key, long seq) throws Exception {
        UUID id = UUID.randomUUID();
        try (var ps = c.prepareStatement("INSERT INTO " + db.schema() + ".ledger (event_id, key, seq) VALUES (?,?,?)")) {
            ps.setObject(1, id);
            ps.setString(2, key);
            ps.setLong(3, seq);
            ps.executeUpdate();
        }
        outbox.publish(c, OutboxMessage.builder().eventId(id).topic(topic).aggregate("Key", key).eventType("Seq")
                .jsonPayload("{}").build());
    }

    @Test
    void three_naive_skip_locked_relays_in_parallel_break_per_key_order() throws Exception {
        Outbox outbox = Outbox.builder().schema(schema).build();
        List<NaiveRelay> naive = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            naive.add(new NaiveRelay("naive-" + i, db.dataSource(), schema.qualifiedOutboxTable(),
                    kafka.bootstrapServers(), null, 100));
        }
        naive.forEach(NaiveRelay::start);
        try (LedgerWriter writer = ItSupport.ledgerWriter(db, outbox, topic).threads(8).keys(20).events(4_000)
                .rollbackShare(0).build().start()) {
            writer.awaitDone(Duration.ofMinutes(2));
        }
        await().atMost(Duration.ofMinutes(2)).until(() -> db.queryLong("SELECT count(*) FROM "
                + schema.qualifiedOutboxTable() + " WHERE state = 'PENDING'") == 0);
        naive.forEach(NaiveRelay::close);
        HistoryReport report = ItSupport.check(db, kafka.bootstrapServers(), topic, WAIT);
        assertThat(report.lost()).isZero();
        assertThat(report.orderViolations()).as(report.summaryLine()).isPositive();
    }

    @Test
    void three_txoutbox_relays_on_the_same_load_keep_per_key_order() throws Exception {
        List<PollingRelay> relays = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            relays.add(PollingRelay.builder().dataSource(db.dataSource()).schema(schema)
                    .transport(KafkaTransport.builder().bootstrapServers(kafka.bootstrapServers()).build())
                    .batchSize(100).pollInterval(Duration.ofMillis(20)).build().start());
        }
        Outbox outbox = Outbox.builder().schema(schema).afterPublish(() -> relays.forEach(PollingRelay::nudge))
                .build();
        try (LedgerWriter writer = ItSupport.ledgerWriter(db, outbox, topic).threads(8).keys(20).events(4_000)
                .rollbackShare(0).build().start()) {
            writer.awaitDone(Duration.ofMinutes(2));
        }
        await().atMost(Duration.ofMinutes(2)).until(() -> db.queryLong("SELECT count(*) FROM "
                + schema.qualifiedOutboxTable() + " WHERE state = 'PENDING'") == 0);
        relays.forEach(PollingRelay::close);
        HistoryAssert.assertThat(ItSupport.check(db, kafka.bootstrapServers(), topic, WAIT)).isClean();
    }
}
