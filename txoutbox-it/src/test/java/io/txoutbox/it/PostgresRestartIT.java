package io.txoutbox.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.txoutbox.Outbox;
import io.txoutbox.OutboxPartitioning;
import io.txoutbox.OutboxSchema;
import io.txoutbox.internal.TestHooks;
import io.txoutbox.internal.progress.ProgressModels;
import io.txoutbox.testing.history.Delivery;
import io.txoutbox.testing.history.HistoryAssert;
import io.txoutbox.testing.history.HistoryReport;
import io.txoutbox.testing.history.LedgerWriter;
import io.txoutbox.testing.kafka.KafkaBroker;
import io.txoutbox.testing.postgres.TestDatabase;
import io.txoutbox.testing.postgres.TestPostgres;
import io.txoutbox.testing.process.JvmProcess;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * PostgreSQL crashes (an immediate shutdown: every connection cut, no checkpoint, WAL replay at the restart) while
 * writers publish through the outbox and the relay, a JVM of its own, is frozen by its hook in the window between
 * the broker's ack and the mark. The relay resumes against the restarted server: its mark fails on a dead
 * connection, it reconnects and sends again only what its progress had not recorded when the server went down (what
 * a lane was still sending when the process froze completes after the restart, so the copies are bounded by that
 * set, not equal to what had reached the topic before the crash); the writers' transactions in flight fail or commit,
 * as the ledger tells; the history checker finds nothing lost, nothing
 * phantom, no key out of order. On the row-state model (here) and on the cursor model, plain and partitioned
 * ({@link PostgresRestartCursorIT}, {@link PostgresRestartCursorPartitionedIT}).
 */
class PostgresRestartIT {

    private static final Logger log = LoggerFactory.getLogger(PostgresRestartIT.class);

    private static final int BATCH = 200;
    private static final int LANES = 2;

    private TestPostgres pg;
    private KafkaBroker kafka;
    private TestDatabase db;
    private OutboxSchema schema;

    @BeforeEach
    void setUp() {
        pg = TestPostgres.startEmbedded();
        kafka = KafkaBroker.builder().start();
        kafka.createTopic("ledger", 3);
        db = pg.newDatabase("pg_restart");
        schema = ItSupport.schema(db, progress(), partitioning());
    }

    /** The outbox's progress model, for the relay process and the test's own reads. */
    OutboxSchema.Progress progress() {
        return OutboxSchema.Progress.ROW_STATE;
    }

    /** The outbox table's partitioning period; {@code null}, a plain table. */
    OutboxPartitioning.Period partitioning() {
        return null;
    }

    @AfterEach
    void tearDown() {
        if (pg != null) {
            pg.close();
        }
        if (kafka != null) {
            kafka.close();
        }
    }

    @Test
    void a_postgres_crash_between_broker_ack_and_mark_under_load_loses_nothing_and_resends_only_the_unrecorded()
            throws Exception {
        Outbox outbox = Outbox.builder().schema(schema).build();
        JvmProcess.Builder relayProcess = ItSupport.relayProcess(db, schema, kafka.bootstrapServers(), LANES, BATCH)
                .hook(TestHooks.AFTER_ACK_BEFORE_MARK, "stop", 3);
        String pending = ItSupport.pending(schema);
        Set<UUID> unrecorded = new HashSet<>();
        long writerErrors;
        try (JvmProcess relay = relayProcess.start()) {
            relay.awaitLine("RELAY-OWNS-ALL-LANES.*", Duration.ofMinutes(1));
            try (LedgerWriter writer = ItSupport.ledgerWriter(db, outbox, "ledger").threads(8).keys(100)
                    .duration(Duration.ofSeconds(12)).targetRate(300).rollbackShare(0.05).build().start()) {
                relay.awaitHook(TestHooks.AFTER_ACK_BEFORE_MARK, Duration.ofMinutes(1));
                await().atMost(Duration.ofSeconds(10)).until(relay::isStopped);
                pg.crash();
                Thread.sleep(2_000); // down: the writers' transactions fail (or commit unseen) and they retry
                pg.restart();
                // what the frozen relay may have delivered and not recorded: what is pending now
                try (Connection c = db.connect(); Statement st = c.createStatement();
                        ResultSet rs = st.executeQuery("SELECT event_id FROM " + schema.qualifiedOutboxTable()
                                + " WHERE " + pending)) {
                    while (rs.next()) {
                        unrecorded.add(rs.getObject(1, UUID.class));
                    }
                }
                relay.resume();
                assertThat(writer.awaitDone(Duration.ofMinutes(2))).isTrue();
                writerErrors = writer.errors().size();
            }
            await().atMost(Duration.ofMinutes(2)).until(() -> db.queryLong("SELECT count(*) FROM "
                    + schema.qualifiedOutboxTable() + " WHERE " + pending) == 0);
            assertThat(relay.isAlive()).as("the relay outlived the server's crash").isTrue();
        }
        List<Delivery> deliveries = ItSupport.deliveries(db, kafka.bootstrapServers(), "ledger",
                Duration.ofMinutes(1));
        HistoryReport report = ItSupport.check(db, "ledger", deliveries);
        HistoryAssert.assertThat(report).isClean();
        Set<UUID> sentTwice = deliveries.stream()
                .collect(Collectors.groupingBy(Delivery::eventId, Collectors.counting())).entrySet().stream()
                .filter(e -> e.getValue() > 1).map(Map.Entry::getKey).collect(Collectors.toSet());
        log.info("{} progress{}: {} unrecorded at the crash, {} sent twice; writer errors {}; {}", progress(),
                partitioning() == null ? "" : ", partitioned", unrecorded.size(), sentTwice.size(), writerErrors,
                report.summaryLine());
        assertThat(writerErrors).as("the writers saw the crash").isPositive();
        assertThat(report.duplicates()).as("the window was really hit: " + report.summaryLine()).isPositive();
        assertThat(unrecorded).as("sent again: only what the progress had not recorded when the server crashed")
                .containsAll(sentTwice);
        assertThat(db.queryLong("SELECT count(*) FROM " + schema.qualifiedOutboxTable() + " WHERE NOT "
                + ProgressModels.of(schema).published(null))).as("nothing parked or dead because of the crash")
                .isZero();
        if (progress() == OutboxSchema.Progress.ROW_STATE) {
            assertThat(report.duplicates()).as("at most the batches in flight").isLessThanOrEqualTo(BATCH * LANES);
        }
    }
}
