package io.txoutbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.txoutbox.testing.postgres.PostgresExtension;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The inbox handler runs on the lane's session, inside the lane's transaction (the one whose mark makes its event
 * PROCESSED), and its statements are bounded by its own budget ({@code handlerTimeout}), not by the relay's default
 * {@code statement_timeout} ({@link RelayConfig#DEFAULT_STATEMENT_TIMEOUT}): a handler statement longer than that but
 * within a larger budget succeeds.
 */
class InboxHandlerSessionIT {

    @RegisterExtension
    static final PostgresExtension postgres = new PostgresExtension();

    private static OutboxSchema schema;
    private static Inbox inbox;

    @BeforeAll
    static void migrate() {
        schema = OutboxSchema.builder().schema(postgres.database().schema()).build();
        schema.migrate(postgres.database().dataSource());
        inbox = Inbox.create(schema);
    }

    private static UUID receive(String consumer, String type) throws Exception {
        UUID id = UUID.randomUUID();
        try (Connection c = postgres.database().connect()) {
            c.setAutoCommit(false);
            inbox.receive(c, consumer, List.of(InboxMessage.builder(id).key("k").eventType(type)
                    .payload("{}".getBytes(StandardCharsets.UTF_8)).build()));
            c.commit();
        }
        return id;
    }

    private static long query(Connection c, String sql) throws Exception {
        try (Statement st = c.createStatement(); ResultSet rs = st.executeQuery(sql)) {
            rs.next();
            return rs.getLong(1);
        }
    }

    @Test
    void the_handler_runs_in_the_lanes_transaction_with_its_own_budget_not_the_relays_statement_timeout()
            throws Exception {
        String consumer = "session-" + UUID.randomUUID();
        Duration budget = RelayConfig.DEFAULT_STATEMENT_TIMEOUT.plusSeconds(3);
        Duration sleep = RelayConfig.DEFAULT_STATEMENT_TIMEOUT.plusMillis(700);
        Map<String, Object> seen = new ConcurrentHashMap<>();
        UUID event = receive(consumer, "Slow");
        try (InboxWorker worker = InboxWorker.builder().dataSource(postgres.database().dataSource()).schema(schema)
                .consumer(consumer).lanes(1).pollInterval(Duration.ofMillis(20))
                .leaseTimeout(budget.multipliedBy(2)).handlerTimeout(budget)
                .retry(RetryPolicy.defaults().withMaxAttempts(1)).failurePolicy(FailurePolicy.PARK_KEY)
                .handler("Slow", (c, e) -> {
                    seen.put("xid", query(c, "SELECT txid_current() % 4294967296"));
                    seen.put("advisoryLocks", query(c, "SELECT count(*) FROM pg_locks WHERE pid = pg_backend_pid()"
                            + " AND locktype = 'advisory' AND granted AND objsubid = 1"));
                    try (Statement st = c.createStatement(); ResultSet rs = st.executeQuery(
                            "SELECT current_setting('application_name'), current_setting('statement_timeout')")) {
                        rs.next();
                        seen.put("applicationName", rs.getString(1));
                        seen.put("statementTimeout", rs.getString(2));
                    }
                    try (PreparedStatement ps = c.prepareStatement("SELECT state FROM " + schema.schema()
                            + ".inbox_event WHERE event_id = ?")) {
                        ps.setObject(1, e.eventId());
                        try (ResultSet rs = ps.executeQuery()) {
                            rs.next();
                            seen.put("stateInHandler", rs.getString(1));
                        }
                    }
                    long t0 = System.nanoTime();
                    query(c, "SELECT count(*) FROM pg_sleep(" + sleep.toMillis() / 1000.0 + ")");
                    seen.put("sleptMs", (System.nanoTime() - t0) / 1_000_000);
                }).build().start()) {
            await().atMost(Duration.ofSeconds(40)).pollInterval(Duration.ofMillis(50)).until(() ->
                    postgres.database().queryLong("SELECT count(*) FROM " + schema.schema() + ".inbox_event"
                            + " WHERE consumer = '" + consumer + "' AND state <> 'PENDING'") == 1);
            assertThat(worker.stats().failedAttempts()).as("failed attempts").isZero();
        }
        try (Connection c = postgres.database().connect(); PreparedStatement ps = c.prepareStatement(
                "SELECT state, xmin::text::bigint, last_error FROM " + schema.schema() + ".inbox_event"
                        + " WHERE event_id = ?")) {
            ps.setObject(1, event);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                assertThat(rs.getString(1)).as("state (last_error %s, handler saw %s)", rs.getString(3), seen)
                        .isEqualTo("PROCESSED");
                assertThat(rs.getLong(2)).as("the mark's transaction is the handler's").isEqualTo(seen.get("xid"));
            }
        }
        assertThat(seen.get("stateInHandler")).as("the event, in the handler's transaction").isEqualTo("PENDING");
        assertThat((Long) seen.get("advisoryLocks")).as("the handler's session holds the lane's lock")
                .isGreaterThanOrEqualTo(1L);
        assertThat((String) seen.get("applicationName")).startsWith("txoutbox-inbox ");
        assertThat(seen.get("statementTimeout")).as("the handler's statement_timeout")
                .isEqualTo(budget.toSeconds() + "s");
        assertThat((Long) seen.get("sleptMs")).as("a statement longer than the relay's statement_timeout")
                .isGreaterThanOrEqualTo(sleep.toMillis() - 50);
    }
}
