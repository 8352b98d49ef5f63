package io.txoutbox.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.txoutbox.Outbox;
import io.txoutbox.OutboxSchema;
import io.txoutbox.OutboxStatus;
import io.txoutbox.PollingRelay;
import io.txoutbox.kafka.KafkaTransport;
import io.txoutbox.spi.RelayListener;
import io.txoutbox.spi.SendResult;
import io.txoutbox.testing.history.HistoryAssert;
import io.txoutbox.testing.history.HistoryReport;
import io.txoutbox.testing.history.LedgerWriter;
import io.txoutbox.testing.kafka.KafkaBroker;
import io.txoutbox.testing.logging.CapturedStderr;
import io.txoutbox.testing.postgres.TestDatabase;
import io.txoutbox.testing.postgres.TestPostgres;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Two outboxes (two services: two schemas, each with its own relay and its own Kafka transport) on one broker. With
 * default settings their lanes must not share a {@code transactional.id}, or they fence each other's producers.
 */
class FencingIdentityIT {

    private static final Logger log = LoggerFactory.getLogger(FencingIdentityIT.class);
    private static final Duration WAIT = Duration.ofSeconds(60);
    private static final Pattern FENCED = Pattern.compile("producer fenced; \\d+ records not sent");
    private static final Pattern CONFLICT = Pattern.compile("another outbox uses the same fencing id");

    private static KafkaBroker kafka;

    private final List<AutoCloseable> closing = new ArrayList<>();

    @BeforeAll
    static void broker() {
        kafka = KafkaBroker.shared();
    }

    @AfterEach
    void tearDown() throws Exception {
        for (int i = closing.size() - 1; i >= 0; i--) {
            closing.get(i).close();
        }
    }

    /** One service: its schema, its relay with default name and lanes, its own transport with default settings. */
    private final class Service {
        final TestDatabase db;
        final OutboxSchema schema;
        final String topic;
        final AtomicLong unavailable = new AtomicLong();
        final PollingRelay relay;
        final LedgerWriter writer;

        Service(String hint) {
            this(hint, RelayConfigDefaults.LANES, null, 150, Duration.ofSeconds(6));
        }

        /** {@code sameIdAs}: a copy of that service's installation row (a database restored from its backup). */
        Service(String hint, int lanes, Service sameIdAs, double rate, Duration writing) {
            db = TestPostgres.shared().newDatabase(hint);
            closing.add(db);
            schema = ItSupport.schema(db);
            if (sameIdAs != null) {
                db.execute("UPDATE " + installation(schema) + " SET id = (SELECT id FROM "
                        + installation(sameIdAs.schema) + ")");
            }
            topic = hint + "-" + UUID.randomUUID().toString().substring(0, 8);
            kafka.createTopic(topic, 4);
            relay = relay(db, schema, lanes, new RelayListener() {
                @Override
                public void sendFailed(String topic, SendResult.Kind kind) {
                    if (kind == SendResult.Kind.UNAVAILABLE) {
                        unavailable.incrementAndGet();
                    }
                }
            });
            Outbox outbox = Outbox.builder().schema(schema).afterPublish(relay::nudge).build();
            writer = ItSupport.ledgerWriter(db, outbox, topic).threads(2).keys(40).targetRate(rate)
                    .duration(writing).build();
            closing.add(writer);
        }

        long fencedRows() {
            return db.queryLong("SELECT count(*) FROM " + schema.qualifiedOutboxTable()
                    + " WHERE last_error LIKE '%fenced%'");
        }

        long pending() {
            return OutboxStatus.pendingCount(db.dataSource(), schema);
        }
    }

    private static String installation(OutboxSchema schema) {
        return schema.schema() + "." + schema.outboxTable() + "_installation";
    }

    private static String installationId(Service s) throws java.sql.SQLException {
        try (java.sql.Connection c = s.db.connect(); java.sql.Statement st = c.createStatement();
                java.sql.ResultSet rs = st.executeQuery("SELECT id FROM " + installation(s.schema))) {
            rs.next();
            return rs.getString(1);
        }
    }

    /** The relay's defaults, named here so that the first test visibly runs with them. */
    private static final class RelayConfigDefaults {
        static final int LANES = io.txoutbox.RelayConfig.DEFAULT_LANES;
    }

    private static int count(Pattern p, String text) {
        Matcher m = p.matcher(text);
        int n = 0;
        while (m.find()) {
            n++;
        }
        return n;
    }

    @Test
    void two_outboxes_with_default_settings_do_not_fence_each_other() throws Exception {
        try (CapturedStderr err = CapturedStderr.start()) {
            Service a = new Service("fence_a");
            Service b = new Service("fence_b");
            a.relay.start();
            b.relay.start();
            a.writer.start();
            b.writer.start();
            // both services write and relay at the same time, on every lane, for 6 s
            assertThat(a.writer.awaitDone(WAIT) && b.writer.awaitDone(WAIT)).isTrue();
            long drainStart = System.nanoTime();
            await().atMost(WAIT).until(() -> a.pending() == 0 && b.pending() == 0);
            long drainMs = (System.nanoTime() - drainStart) / 1_000_000;
            int fenced = count(FENCED, err.text());
            log.info("two default services: {} 'producer fenced' lines, UNAVAILABLE results a={} b={}, rows fenced "
                    + "a={} b={}, drain after the writers stopped {} ms, published a={} b={}", fenced,
                    a.unavailable.get(), b.unavailable.get(), a.fencedRows(), b.fencedRows(), drainMs,
                    a.relay.stats().published(), b.relay.stats().published());
            assertThat(fenced).as("'producer fenced' log lines").isZero();
            // UNAVAILABLE alone is not fencing: a fresh broker's transaction coordinator may time out the first
            // InitProducerId under load. A fenced batch leaves its cause on its rows' last_error.
            assertThat(a.fencedRows() + b.fencedRows()).as("rows whose last send was fenced").isZero();
            for (Service s : List.of(a, b)) {
                HistoryReport report = ItSupport.check(s.db, kafka.bootstrapServers(), s.topic, WAIT);
                HistoryAssert.assertThat(report).isClean().hasNoDuplicates();
                assertThat(report.committed()).isGreaterThan(100);
            }
        }
    }

    @Test
    void a_restored_copy_with_the_same_installation_id_stops_one_lane_once_and_the_other_keeps_delivering()
            throws Exception {
        try (CapturedStderr err = CapturedStderr.start()) {
            // many small batches on both sides for 10 s, so that the two lanes alternate
            Service a = new Service("clone_a", 1, null, 60, Duration.ofSeconds(10));
            Service b = new Service("clone_b", 1, a, 60, Duration.ofSeconds(10)); // restored from a's backup
            a.relay.start();
            b.relay.start();
            a.writer.start();
            b.writer.start();
            long start = System.nanoTime();
            try {
                await().atMost(Duration.ofSeconds(30)).until(() -> count(CONFLICT, err.text()) > 0);
            } catch (org.awaitility.core.ConditionTimeoutException e) {
                log.info("no conflict report within 30 s");
            }
            long reportMs = (System.nanoTime() - start) / 1_000_000;
            int fencedAtReport = count(FENCED, err.text());
            assertThat(a.writer.awaitDone(WAIT) && b.writer.awaitDone(WAIT)).isTrue();
            Thread.sleep(3_000); // a loop would go on fencing meanwhile
            String text = err.text();
            int fenced = count(FENCED, text);
            int conflicts = count(CONFLICT, text);
            Service stopped = a.relay.failure().isPresent() ? a : b;
            Service running = stopped == a ? b : a;
            await().atMost(WAIT).until(() -> running.pending() == 0);
            log.info("restored copy: {} conflict report(s) after {} ms, 'producer fenced' lines {} at the report and {}"
                    + " at the end, stopped side {} ({} pending), running side published {}", conflicts, reportMs,
                    fencedAtReport, fenced, stopped.schema.schema(), stopped.pending(),
                    running.relay.stats().published());
            assertThat(conflicts).as("conflict reports").isEqualTo(1);
            assertThat(fenced).as("'producer fenced' lines after the report").isEqualTo(fencedAtReport);
            assertThat(running.relay.failure()).isEmpty();
            String sharedId = installationId(a);
            assertThat(stopped.relay.failure()).hasValueSatisfying(f -> assertThat(f.getMessage())
                    .contains("txoutbox-" + sharedId + "-0")
                    .contains(stopped.schema.schema() + ".outbox_event").contains(stopped.relay.instanceId()));
            assertThat(stopped.pending()).as("the stopped lane's events wait, none lost").isPositive();
            HistoryReport report = ItSupport.check(running.db, kafka.bootstrapServers(), running.topic, WAIT);
            HistoryAssert.assertThat(report).isClean();
        }
    }

    /**
     * One outbox, two relay instances: the second takes one of the first's two lanes (its producer's
     * {@code initTransactions} fences the first's producer for that lane), then stops, and the first takes the lane
     * back. The lane must send on a producer made when it took the lane back, not on the one fenced meanwhile: no
     * batch of it fails as fenced, nothing waits for a producer made only after a failed batch.
     */
    @Test
    void a_lane_taken_back_after_another_instance_owned_it_sends_on_a_new_producer() throws Exception {
        try (CapturedStderr err = CapturedStderr.start()) {
            TestDatabase db = TestPostgres.shared().newDatabase("retake");
            closing.add(db);
            OutboxSchema schema = ItSupport.schema(db);
            String topic = "retake-" + UUID.randomUUID().toString().substring(0, 8);
            kafka.createTopic(topic, 4);
            PollingRelay first = relay(db, schema, 2, RelayListener.none());
            Outbox outbox = Outbox.builder().schema(schema).afterPublish(first::nudge).build();
            LedgerWriter writer = ItSupport.ledgerWriter(db, outbox, topic).threads(2).keys(40).targetRate(100)
                    .duration(Duration.ofSeconds(25)).build();
            closing.add(writer);
            first.start();
            writer.start();
            await().atMost(WAIT).until(() -> first.stats().published() > 50);
            PollingRelay second = relay(db, schema, 2, RelayListener.none());
            second.start();
            await().atMost(WAIT).until(() -> second.stats().lanesOwned() == 1 && second.stats().published() > 0);
            second.close();
            await().atMost(WAIT).until(() -> first.stats().lanesOwned() == 2);
            long atRetake = first.stats().published();
            await().atMost(WAIT).until(() -> first.stats().published() > atRetake + 100);
            assertThat(writer.awaitDone(WAIT)).isTrue();
            await().atMost(WAIT).until(() -> OutboxStatus.pendingCount(db.dataSource(), schema) == 0);
            long fencedRows = db.queryLong("SELECT count(*) FROM " + schema.qualifiedOutboxTable()
                    + " WHERE last_error LIKE '%fenced%'");
            log.info("lane taken back: {} 'producer fenced' lines, {} rows whose last send was fenced, published "
                    + "first={} second={}", count(FENCED, err.text()), fencedRows, first.stats().published(),
                    second.stats().published());
            assertThat(fencedRows).as("rows whose last send was fenced").isZero();
            assertThat(count(FENCED, err.text())).as("'producer fenced' log lines").isZero();
            HistoryReport report = ItSupport.check(db, kafka.bootstrapServers(), topic, WAIT);
            HistoryAssert.assertThat(report).isClean();
        }
    }

    /** A relay instance on {@code schema} with its own Kafka transport (default settings), closed after the test. */
    private PollingRelay relay(TestDatabase db, OutboxSchema schema, int lanes, RelayListener listener) {
        KafkaTransport transport = KafkaTransport.builder().bootstrapServers(kafka.bootstrapServers()).build();
        PollingRelay relay = PollingRelay.builder().dataSource(db.dataSource()).schema(schema).transport(transport)
                .pollInterval(Duration.ofMillis(50)).lanes(lanes).listener(listener).build();
        closing.add(relay);
        return relay;
    }
}
