package io.txoutbox.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.txoutbox.Outbox;
import io.txoutbox.OutboxPartitioning;
import io.txoutbox.OutboxSchema;
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
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The relay as a separate JVM, SIGKILLed by its own hook in the window between the broker's ack and the mark. On the
 * row-state model (here) and on the cursor model, plain and daily-partitioned ({@link RelayCrashCursorIT},
 * {@link RelayCrashCursorPartitionedIT}, which override {@link #progress} and {@link #partitioning}).
 */
class RelayCrashIT {

    private static final Logger log = LoggerFactory.getLogger(RelayCrashIT.class);

    private static final int BATCH = 200;
    private static final int LANES = 2;

    private KafkaBroker kafka;
    private TestDatabase db;
    private OutboxSchema schema;

    @BeforeEach
    void setUp() {
        kafka = KafkaBroker.builder().start();
        kafka.createTopic("ledger", 3);
        db = TestPostgres.shared().newDatabase("relay_crash");
        schema = ItSupport.schema(db, progress(), partitioning());
    }

    /** The outbox's progress model, for the relay processes and the test's own reads. */
    OutboxSchema.Progress progress() {
        return OutboxSchema.Progress.ROW_STATE;
    }

    /** The outbox table's partitioning period; {@code null}, a plain table. */
    OutboxPartitioning.Period partitioning() {
        return null;
    }

    @AfterEach
    void tearDown() {
        db.close();
        kafka.close();
    }

    private JvmProcess.Builder relayProcess() {
        return ItSupport.relayProcess(db, schema, kafka.bootstrapServers(), LANES, BATCH);
    }

    /**
     * What goes out twice is exactly what the killed relay delivered and its progress had not recorded: the rows still
     * pending (as the model says) after the crash that had reached the topic before it. Row state: the batches in
     * flight; cursor: also what its lanes delivered since their last settlement.
     */
    @Test
    void killed_between_broker_ack_and_mark_then_restarted_loses_nothing_and_resends_the_unmarked_batch()
            throws Exception {
        Outbox outbox = Outbox.builder().schema(schema).build();
        try (LedgerWriter writer = ItSupport.ledgerWriter(db, outbox, "ledger").threads(4).keys(100).events(3_000)
                .rollbackShare(0.05).build().start()) {
            assertThat(writer.awaitDone(Duration.ofMinutes(2))).isTrue();
        }
        try (JvmProcess first = relayProcess().hook("after-ack-before-mark", "kill", 3).start()) {
            first.awaitHook("after-ack-before-mark", Duration.ofMinutes(1));
            assertThat(first.awaitExit(Duration.ofSeconds(30))).as("SIGKILLed").isEqualTo(137);
        }
        String pending = ItSupport.pending(schema);
        Map<Integer, Long> endAtCrash = ItSupport.endOffsets(kafka.bootstrapServers(), "ledger");
        Set<UUID> unrecorded = new HashSet<>();
        try (Connection c = db.connect(); Statement st = c.createStatement();
                ResultSet rs = st.executeQuery("SELECT event_id FROM " + schema.qualifiedOutboxTable() + " WHERE "
                        + pending)) {
            while (rs.next()) {
                unrecorded.add(rs.getObject(1, UUID.class));
            }
        }
        assertThat(unrecorded).as("the crash left acknowledged but unmarked rows").isNotEmpty();

        try (JvmProcess second = relayProcess().start()) {
            second.awaitLine("RELAY-OWNS-ALL-LANES.*", Duration.ofMinutes(1));
            await().atMost(Duration.ofMinutes(2)).until(() -> db.queryLong("SELECT count(*) FROM "
                    + schema.qualifiedOutboxTable() + " WHERE " + pending) == 0);
        }
        List<Delivery> deliveries = ItSupport.deliveries(db, kafka.bootstrapServers(), "ledger",
                Duration.ofMinutes(1));
        HistoryReport report = ItSupport.check(db, "ledger", deliveries);
        HistoryAssert.assertThat(report).isClean();
        long deliveredUnrecorded = deliveries.stream()
                .filter(d -> d.offset() < endAtCrash.getOrDefault(d.partition(), 0L))
                .map(Delivery::eventId).filter(unrecorded::contains).distinct().count();
        log.info("{} progress: {} events delivered before the crash and not recorded; {}", progress(),
                deliveredUnrecorded, report.summaryLine());
        assertThat(report.duplicates()).as("the window was really hit: " + report.summaryLine()).isPositive();
        assertThat(report.duplicates()).as("sent again: exactly what the killed relay delivered and did not record")
                .isEqualTo(deliveredUnrecorded);
        if (progress() == OutboxSchema.Progress.ROW_STATE) {
            assertThat(report.duplicates()).as("at most the batches in flight").isLessThanOrEqualTo(BATCH * LANES);
        }
    }
}
