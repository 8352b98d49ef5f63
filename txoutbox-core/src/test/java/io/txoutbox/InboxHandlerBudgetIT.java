package io.txoutbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.txoutbox.testing.postgres.PostgresExtension;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The handler time budget: a handler slower than the budget fails its event (a failed attempt with an error naming
 * the budget, retried and then parked per the policies) while the other events of its batch are processed; it is
 * not left to run on, holding the batch's transaction, until the session's lease ends it.
 */
class InboxHandlerBudgetIT {

    @RegisterExtension
    static final PostgresExtension postgres = new PostgresExtension();

    private static OutboxSchema schema;
    private static Inbox inbox;
    private static final int OTHERS = 20;

    @BeforeAll
    static void migrate() {
        schema = OutboxSchema.builder().schema(postgres.database().schema()).build();
        schema.migrate(postgres.database().dataSource());
        inbox = Inbox.create(schema);
        postgres.database().execute("CREATE TABLE budget_effect (id bigserial PRIMARY KEY, consumer text NOT NULL,"
                + " event_id uuid NOT NULL)");
    }

    /** OTHERS events of their own keys around one of type Slow (key "slow"), received in one transaction. */
    private static UUID receive(String consumer) throws Exception {
        List<InboxMessage> messages = new ArrayList<>();
        UUID slow = UUID.randomUUID();
        for (int i = 0; i < OTHERS; i++) {
            if (i == OTHERS / 2) {
                messages.add(InboxMessage.builder(slow).key("slow").eventType("Slow").payload(new byte[0]).build());
            }
            messages.add(InboxMessage.builder(UUID.randomUUID()).key("k" + i).eventType("Fast")
                    .payload(Integer.toString(i).getBytes(StandardCharsets.UTF_8)).build());
        }
        try (Connection c = postgres.database().connect()) {
            c.setAutoCommit(false);
            inbox.receive(c, consumer, messages);
            c.commit();
        }
        return slow;
    }

    private static void effect(Connection c, InboxEvent e) throws Exception {
        try (PreparedStatement ps = c.prepareStatement(
                "INSERT INTO budget_effect (consumer, event_id) VALUES (?, ?)")) {
            ps.setString(1, e.consumer());
            ps.setObject(2, e.eventId());
            ps.executeUpdate();
        }
    }

    private static long count(String where) {
        return postgres.database().queryLong("SELECT count(*) FROM " + schema.schema() + ".inbox_event WHERE "
                + where);
    }

    private static String lastError(UUID eventId) throws Exception {
        try (Connection c = postgres.database().connect(); PreparedStatement ps = c.prepareStatement(
                "SELECT last_error FROM " + schema.schema() + ".inbox_event WHERE event_id = ?")) {
            ps.setObject(1, eventId);
            try (var rs = ps.executeQuery()) {
                rs.next();
                return rs.getString(1);
            }
        }
    }

    @Test
    void a_handler_slower_than_the_default_budget_fails_its_event_and_the_rest_of_the_batch_is_processed()
            throws Exception {
        String consumer = "budget-" + UUID.randomUUID();
        UUID slow = receive(consumer);
        List<String> slowCalls = new CopyOnWriteArrayList<>();
        long t0 = System.nanoTime();
        try (InboxWorker worker = InboxWorker.builder().dataSource(postgres.database().dataSource()).schema(schema)
                .consumer(consumer).lanes(1).pollInterval(Duration.ofMillis(20))
                .retry(RetryPolicy.defaults().withMaxAttempts(2).withBackoff(Duration.ofMillis(50),
                        Duration.ofMillis(50)))
                .failurePolicy(FailurePolicy.PARK_KEY)
                .handler("Fast", InboxHandlerBudgetIT::effect)
                .handler("Slow", (c, e) -> {
                    effect(c, e); // undone with the event's savepoint
                    long start = System.nanoTime();
                    try {
                        Thread.sleep(60_000);
                        slowCalls.add("slept 60 s");
                    } catch (InterruptedException interrupted) {
                        slowCalls.add("interrupted after " + (System.nanoTime() - start) / 1_000_000 + " ms");
                        throw interrupted;
                    }
                }).build().start()) {
            // the fast events share the slow one's batch: they commit once its handler is given up on
            await().atMost(Duration.ofSeconds(15)).pollInterval(Duration.ofMillis(50)).untilAsserted(() ->
                    assertThat(count("consumer = '" + consumer + "' AND state = 'PROCESSED'"))
                            .as("events of the slow event's batch processed").isEqualTo(OTHERS));
            long firstBatchMs = (System.nanoTime() - t0) / 1_000_000;
            await().atMost(Duration.ofSeconds(20)).pollInterval(Duration.ofMillis(50)).untilAsserted(() ->
                    assertThat(count("event_id = '" + slow + "' AND state = 'PARKED' AND attempts = 2"))
                            .as("the slow event, failed twice, parked").isOne());
            long parkedMs = (System.nanoTime() - t0) / 1_000_000;
            System.out.printf("handler budget: batch committed after %d ms, slow event parked after %d ms; %s%n",
                    firstBatchMs, parkedMs, slowCalls);
            assertThat(worker.stats().failedAttempts()).isEqualTo(2);
        }
        assertThat(lastError(slow)).contains("handlerTimeout");
        assertThat(slowCalls).hasSize(2).allMatch(s -> s.startsWith("interrupted"));
        assertThat(postgres.database().queryLong("SELECT count(*) FROM budget_effect WHERE consumer = '"
                + consumer + "' AND event_id = '" + slow + "'")).as("the slow handler's effects, undone").isZero();
        assertThat(postgres.database().queryLong("SELECT count(*) FROM budget_effect WHERE consumer = '"
                + consumer + "'")).isEqualTo(OTHERS);
    }
    @Test
    void a_handler_statement_past_the_budget_is_cut_by_the_server_and_fails_only_its_event() throws Exception {
        String consumer = "budget-sql-" + UUID.randomUUID();
        UUID slow = receive(consumer);
        List<Long> slowMs = new CopyOnWriteArrayList<>();
        try (InboxWorker worker = InboxWorker.builder().dataSource(postgres.database().dataSource()).schema(schema)
                .consumer(consumer).lanes(1).pollInterval(Duration.ofMillis(20))
                .leaseTimeout(Duration.ofSeconds(1)).handlerTimeout(Duration.ofMillis(500))
                .retry(RetryPolicy.defaults().withMaxAttempts(1))
                .failurePolicy(FailurePolicy.PARK_KEY)
                .handler("Fast", InboxHandlerBudgetIT::effect)
                .handler("Slow", (c, e) -> {
                    effect(c, e);
                    long start = System.nanoTime();
                    try (java.sql.Statement st = c.createStatement()) {
                        st.execute("SELECT pg_sleep(30)"); // a statement does not notice a thread interrupt
                    } finally {
                        slowMs.add((System.nanoTime() - start) / 1_000_000);
                    }
                }).build().start()) {
            await().atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(20)).untilAsserted(() ->
                    assertThat(count("event_id = '" + slow + "' AND state = 'PARKED' AND attempts = 1"))
                            .as("the slow event, failed once, parked").isOne());
            await().atMost(Duration.ofSeconds(10)).untilAsserted(() ->
                    assertThat(count("consumer = '" + consumer + "' AND state = 'PROCESSED'")).isEqualTo(OTHERS));
            assertThat(worker.stats().loopErrors()).as("no batch failed").isZero();
        }
        System.out.printf("handler budget 500 ms: pg_sleep(30) cut after %s ms%n", slowMs);
        assertThat(slowMs).hasSize(1).allMatch(ms -> ms >= 450 && ms < 5_000);
        assertThat(lastError(slow)).contains("longer than inboxWorker.handlerTimeout (500 ms)");
        assertThat(postgres.database().queryLong("SELECT count(*) FROM budget_effect WHERE consumer = '"
                + consumer + "'")).isEqualTo(OTHERS);
    }
    @Test
    void a_handler_that_ignores_the_interrupt_past_the_lease_fails_its_event_not_its_batch_for_ever()
            throws Exception {
        String consumer = "budget-stuck-" + UUID.randomUUID();
        UUID slow = receive(consumer);
        try (InboxWorker worker = InboxWorker.builder().dataSource(postgres.database().dataSource()).schema(schema)
                .consumer(consumer).lanes(1).pollInterval(Duration.ofMillis(20))
                .leaseTimeout(Duration.ofSeconds(1)).handlerTimeout(Duration.ofMillis(500))
                .retry(RetryPolicy.defaults().withMaxAttempts(2).withBackoff(Duration.ofMillis(50),
                        Duration.ofMillis(50)))
                .failurePolicy(FailurePolicy.PARK_KEY)
                .handler("Fast", InboxHandlerBudgetIT::effect)
                .handler("Slow", (c, e) -> {
                    effect(c, e);
                    // waits 2 s outside the database and shrugs off interrupts: the lease (1 s) ends the session
                    long deadline = System.nanoTime() + Duration.ofSeconds(2).toNanos();
                    while (System.nanoTime() < deadline) {
                        Thread.interrupted();
                        java.util.concurrent.locks.LockSupport.parkNanos(Duration.ofMillis(20).toNanos());
                    }
                }).build().start()) {
            await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(50)).untilAsserted(() ->
                    assertThat(count("consumer = '" + consumer + "' AND state = 'PROCESSED'"))
                            .as("events of the stuck event's batch processed").isEqualTo(OTHERS));
            await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(50)).untilAsserted(() ->
                    assertThat(count("event_id = '" + slow + "' AND state = 'PARKED' AND attempts = 2"))
                            .as("the stuck event, failed twice, parked").isOne());
            System.out.printf("handler ignoring the budget: %d batches lost with their sessions%n",
                    worker.stats().loopErrors());
        }
        assertThat(lastError(slow)).contains("handlerTimeout");
        assertThat(postgres.database().queryLong("SELECT count(*) FROM budget_effect WHERE consumer = '"
                + consumer + "'")).isEqualTo(OTHERS);
    }
}
