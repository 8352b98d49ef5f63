package io.txoutbox.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.txoutbox.Inbox;
import io.txoutbox.InboxMessage;
import io.txoutbox.InboxWorker;
import io.txoutbox.OutboxSchema;
import io.txoutbox.RelayConfig;
import io.txoutbox.testing.postgres.TestDatabase;
import io.txoutbox.testing.postgres.TestPostgres;
import io.txoutbox.testing.process.JvmProcess;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * An inbox worker as a separate JVM, SIGSTOPped by its own handler in the middle of a batch (the batch's
 * transaction open, one effect written and not committed, the lanes' advisory locks held): with the default lease
 * another worker owns its lanes within the lease + 5 s and processes every row; when the stopped worker is resumed,
 * its session is gone and its stale batch never commits. Effects are rows without a unique constraint, so a doubled
 * or lost effect shows per event.
 */
class InboxWorkerLeaseIT {

    private static final Logger log = LoggerFactory.getLogger(InboxWorkerLeaseIT.class);
    private static final int EVENTS = 400;
    private static final int KEYS = 40;
    private static final int LANES = 2;
    private static final String CONSUMER = "leased";

    private TestDatabase db;
    private OutboxSchema schema;

    @BeforeEach
    void setUp() {
        db = TestPostgres.shared().newDatabase("inbox_lease");
        schema = OutboxSchema.builder().schema(db.schema()).build();
        schema.migrate(db.dataSource());
        db.execute("CREATE TABLE effect (id bigserial PRIMARY KEY, event_id uuid NOT NULL, worker text NOT NULL)");
    }

    @AfterEach
    void tearDown() {
        db.close();
    }

    private long sessionsOf(String worker) {
        return db.queryLong("SELECT count(*) FROM pg_stat_activity WHERE application_name LIKE 'txoutbox-inbox "
                + worker + "-%'");
    }

    @Test
    void a_worker_stopped_mid_batch_loses_its_lanes_within_the_lease_and_never_commits_its_stale_batch()
            throws Exception {
        TestPostgres pg = db.server();
        JvmProcess.Builder process = JvmProcess.builder(InboxWorkerProcessMain.class).name("inbox-worker-A")
                .logFile(java.nio.file.Path.of("target", "inbox-worker-lease.log")).jvmArgs("-Xmx128m")
                .args(db.jdbcUrl(), pg.user(), pg.password(), db.schema(), CONSUMER, Integer.toString(LANES), "50",
                        "5", "A");
        try (JvmProcess a = process.start()) {
            a.awaitLine("WORKER-OWNS-ALL-LANES 2", Duration.ofMinutes(1));
            receive();
            a.awaitLine("WORKER-STOPPING-MID-BATCH.*", Duration.ofSeconds(30));
            await().atMost(Duration.ofSeconds(10)).until(a::isStopped);
            long stoppedAt = System.nanoTime();
            assertThat(sessionsOf("A")).as("the stopped worker's lane sessions").isEqualTo(LANES);
            assertThat(db.queryLong("SELECT count(*) FROM pg_stat_activity WHERE application_name LIKE"
                    + " 'txoutbox-inbox A-%' AND state = 'idle in transaction' AND backend_xid IS NOT NULL"))
                    .as("stopped mid-batch: a transaction with an uncommitted effect is open").isPositive();

            long lease = RelayConfig.DEFAULT_LEASE_TIMEOUT.toMillis(); // the inbox worker's default lease too
            try (InboxWorker b = InboxWorker.builder().dataSource(db.dataSource()).schema(schema).consumer(CONSUMER)
                    .name("B").lanes(LANES).batchSize(50).pollInterval(Duration.ofMillis(20))
                    .defaultHandler((c, e) -> {
                        try (PreparedStatement ps = c.prepareStatement(
                                "INSERT INTO effect (event_id, worker) VALUES (?, 'B')")) {
                            ps.setObject(1, e.eventId());
                            ps.executeUpdate();
                        }
                    }).build().start()) {
                await().atMost(Duration.ofMillis(lease + 5_000)).pollInterval(Duration.ofMillis(50))
                        .until(() -> b.stats().lanesOwned() == LANES);
                long takeoverMs = (System.nanoTime() - stoppedAt) / 1_000_000;
                log.info("worker B owns all lanes {} ms after A was stopped (lease {} ms)", takeoverMs, lease);
                assertThat(sessionsOf("A")).as("the stopped worker's sessions were ended").isZero();
                await().atMost(Duration.ofSeconds(30)).until(() -> pending() == 0);
                long drainedMs = (System.nanoTime() - stoppedAt) / 1_000_000;
                log.info("all {} rows processed {} ms after A was stopped", EVENTS, drainedMs);

                a.resume();
                a.awaitLine("WORKER-RESUMED", Duration.ofSeconds(10));
                // the resumed lane meets its ended session at its next statement, rolls back and stands by
                a.awaitLine("batch failed, reconnecting.*", Duration.ofSeconds(20));
                a.awaitLine("another worker of consumer " + CONSUMER + " owns this lane", Duration.ofSeconds(20));
                assertThat(a.isAlive()).isTrue();
            }
        }
        assertThat(db.queryLong("SELECT count(*) FROM effect WHERE worker = 'A'"))
                .as("effects the stopped worker committed").isZero();
        assertThat(db.queryLong("SELECT count(*) FROM " + db.schema() + ".inbox_event i WHERE i.consumer = '"
                + CONSUMER + "' AND (SELECT count(*) FROM effect e WHERE e.event_id = i.event_id) <> 1"))
                .as("events whose effect is missing or doubled").isZero();
        assertThat(db.queryLong("SELECT count(*) FROM effect")).isEqualTo(EVENTS);
    }

    private long pending() {
        return db.queryLong("SELECT count(*) FROM " + db.schema() + ".inbox_event WHERE consumer = '" + CONSUMER
                + "' AND state <> 'PROCESSED'");
    }

    private void receive() throws Exception {
        List<InboxMessage> messages = new ArrayList<>(EVENTS);
        for (int i = 0; i < EVENTS; i++) {
            messages.add(InboxMessage.builder(UUID.randomUUID()).key("k" + (i % KEYS)).eventType("Effect")
                    .payload(Integer.toString(i).getBytes(StandardCharsets.UTF_8)).build());
        }
        try (Connection c = db.connect()) {
            c.setAutoCommit(false);
            Inbox.create(schema).receive(c, CONSUMER, messages);
            c.commit();
        }
    }
}
