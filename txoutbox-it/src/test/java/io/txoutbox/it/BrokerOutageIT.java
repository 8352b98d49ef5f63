package io.txoutbox.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.txoutbox.Outbox;
import io.txoutbox.OutboxSchema;
import io.txoutbox.PollingRelay;
import io.txoutbox.RetryPolicy;
import io.txoutbox.internal.progress.ProgressModels;
import io.txoutbox.kafka.KafkaTransport;
import io.txoutbox.test.acceptance.FaultInjectingTransport;
import io.txoutbox.testing.history.HistoryAssert;
import io.txoutbox.testing.history.HistoryReport;
import io.txoutbox.testing.history.LedgerWriter;
import io.txoutbox.testing.kafka.KafkaBrokerProcess;
import io.txoutbox.testing.postgres.TestDatabase;
import io.txoutbox.testing.postgres.TestPostgres;
import io.txoutbox.testing.postgres.TestSession;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Random;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The broker process stops for longer than the producer's delivery timeout while 20 writers keep writing on 200 keys
 * and the transport also fails random records: nothing is lost, no key goes out of order, no relay transaction
 * stays open beyond the bound, and the outage shows on the rows. On the row-state model (here) and on the cursor
 * model ({@link BrokerOutageCursorIT}, which overrides {@link #progress}).
 */
class BrokerOutageIT {

    private KafkaBrokerProcess broker;
    private TestDatabase db;
    private OutboxSchema schema;
    /**
     * The test's own session for its reads (the sampler's, every 200 ms, and the waits'): a new connection per read
     * cost PostgreSQL a backend start each time (956 sessions and 99 s of server CPU for this test in the CI run of
     * 2026-12-04 17:21), CPU taken from the relay under test.
     */
    private TestSession probe;

    @BeforeEach
    void setUp() {
        broker = KafkaBrokerProcess.builder().startTimeout(Duration.ofMinutes(3)).start();
        broker.createTopic("ledger", 3);
        db = TestPostgres.shared().newDatabase("broker_outage");
        schema = ItSupport.schema(db, progress());
        probe = db.session();
    }

    /** One number from the test's session; the sampler's thread and the test's share it. */
    private long queryLong(String sql) {
        return probe.queryLong(sql);
    }

    /** The outbox's progress model, for the relay and the test's own reads. */
    OutboxSchema.Progress progress() {
        return OutboxSchema.Progress.ROW_STATE;
    }

    @AfterEach
    void tearDown() throws SQLException {
        if (db != null) { // and the test's session
            db.close();
        }
        if (broker != null) {
            broker.close();
        }
    }

    @Test
    void a_broker_outage_longer_than_the_delivery_timeout_loses_nothing_and_holds_no_transaction() throws Exception {
        Random random = new Random(3);
        FaultInjectingTransport transport = new FaultInjectingTransport(
                KafkaTransport.builder().bootstrapServers(broker.bootstrapServers()).build(),
                r -> random.nextInt(300) == 0);
        Duration bound = Duration.ofSeconds(10);
        AtomicLong longestRelayTransactionMs = new AtomicLong();
        AtomicLong outageRows = new AtomicLong();
        ScheduledExecutorService sampler = Executors.newSingleThreadScheduledExecutor();
        try (PollingRelay relay = PollingRelay.builder().dataSource(db.dataSource()).schema(schema).name("outage")
                .transport(transport).batchSize(500).transactionTimeout(bound)
                .outageBackoffMax(Duration.ofSeconds(2))
                .retry(RetryPolicy.defaults().withBackoff(Duration.ofMillis(100), Duration.ofSeconds(2)))
                .build().start()) {
            Outbox outbox = Outbox.builder().schema(schema).afterPublish(relay::nudge).build();
            sampler.scheduleAtFixedRate(() -> {
                longestRelayTransactionMs.accumulateAndGet(queryLong(
                        "SELECT coalesce(max(extract(epoch FROM clock_timestamp() - xact_start) * 1000), 0)::bigint"
                                + " FROM pg_stat_activity WHERE application_name LIKE 'txoutbox-relay%'"
                                + " AND xact_start IS NOT NULL"), Math::max);
                outageRows.accumulateAndGet(queryLong("SELECT count(*) FROM " + schema.qualifiedOutboxTable()
                        + " WHERE state = 'PENDING' AND last_error LIKE 'transport unavailable%'"), Math::max);
            }, 0, 200, TimeUnit.MILLISECONDS);

            try (LedgerWriter writer = ItSupport.ledgerWriter(db, outbox, "ledger").threads(20).keys(200)
                    .duration(Duration.ofSeconds(30)).targetRate(400).rollbackShare(0.05).build().start()) {
                await().atMost(Duration.ofMinutes(1)).until(() -> relay.stats().published() > 500);
                broker.stop();
                long downAt = System.nanoTime();
                // the outage itself: down for longer than the producer's delivery timeout (8 s) while writers go on
                Thread.sleep(12_000);
                long publishedWhileDown = relay.stats().published();
                broker.restart();
                assertThat(TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - downAt)).isGreaterThanOrEqualTo(12);
                assertThat(writer.awaitDone(Duration.ofMinutes(2))).isTrue();
                assertThat(writer.errors()).isEmpty();
                await().atMost(Duration.ofMinutes(2)).until(() -> queryLong("SELECT count(*) FROM "
                        + schema.qualifiedOutboxTable() + " WHERE " + ItSupport.pending(schema)) == 0);
                assertThat(relay.stats().published()).isGreaterThan(publishedWhileDown);
            }
        } finally {
            sampler.shutdownNow();
        }
        HistoryReport report = ItSupport.check(db, broker.bootstrapServers(), "ledger", Duration.ofMinutes(1));
        HistoryAssert.assertThat(report).isClean();
        assertThat(outageRows.get()).as("the outage is visible on the waiting rows").isPositive();
        assertThat(longestRelayTransactionMs.get()).as("no relay transaction open beyond the bound")
                .isLessThan(bound.toMillis());
        assertThat(transport.injected()).isPositive();
        assertThat(queryLong("SELECT count(*) FROM " + schema.qualifiedOutboxTable() + " WHERE NOT "
                + ProgressModels.of(schema).published(null))).as("nothing parked or dead because of the outage")
                .isZero();
    }
}
