package io.txoutbox.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.txoutbox.Outbox;
import io.txoutbox.OutboxSchema;
import io.txoutbox.testing.history.HistoryAssert;
import io.txoutbox.testing.history.HistoryReport;
import io.txoutbox.testing.history.LedgerWriter;
import io.txoutbox.testing.kafka.KafkaBroker;
import io.txoutbox.testing.postgres.TestDatabase;
import io.txoutbox.testing.postgres.TestPostgres;
import io.txoutbox.testing.process.JvmProcess;
import java.time.Duration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The relay as a separate JVM, SIGKILLed by its own hook in the window between the broker's ack and the mark. */
class RelayCrashIT {

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
        schema = ItSupport.schema(db);
    }

    @AfterEach
    void tearDown() {
        db.close();
        kafka.close();
    }

    private JvmProcess.Builder relayProcess() {
        TestPostgres pg = db.server();
        return JvmProcess.builder(RelayProcessMain.class).name("relay").jvmArgs("-Xmx256m")
                .args(pg.jdbcUrl(), pg.user(), pg.password(), db.schema(), kafka.bootstrapServers(),
                        Integer.toString(LANES), Integer.toString(BATCH));
    }

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
        long pendingAfterCrash = db.queryLong("SELECT count(*) FROM " + schema.qualifiedOutboxTable()
                + " WHERE state = 'PENDING'");
        assertThat(pendingAfterCrash).as("the crash left acknowledged but unmarked rows").isPositive();

        try (JvmProcess second = relayProcess().start()) {
            second.awaitLine("RELAY-OWNS-ALL-LANES.*", Duration.ofMinutes(1));
            await().atMost(Duration.ofMinutes(2)).until(() -> db.queryLong("SELECT count(*) FROM "
                    + schema.qualifiedOutboxTable() + " WHERE state = 'PENDING'") == 0);
        }
        HistoryReport report = ItSupport.check(db, kafka.bootstrapServers(), "ledger", Duration.ofMinutes(1));
        HistoryAssert.assertThat(report).isClean();
        assertThat(report.duplicates()).as("the window was really hit: " + report.summaryLine()).isPositive();
        assertThat(report.duplicates()).as("at most the batches in flight").isLessThanOrEqualTo(BATCH * LANES);
    }
}
