package io.txoutbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.txoutbox.testing.postgres.PostgresExtension;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
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

/** The inbox worker's lane sessions carry the lease (as the relay's do), and an idle lane keeps it by heartbeats. */
class InboxWorkerSessionIT {

    @RegisterExtension
    static final PostgresExtension postgres = new PostgresExtension();

    private static OutboxSchema schema;

    @BeforeAll
    static void migrate() {
        schema = OutboxSchema.builder().schema(postgres.database().schema()).build();
        schema.migrate(postgres.database().dataSource());
    }

    @Test
    void an_idle_lane_keeps_its_session_past_several_leases_and_handlers_see_the_lease_settings() throws Exception {
        String consumer = "session-" + UUID.randomUUID();
        Map<String, String> seen = new ConcurrentHashMap<>();
        // a poll interval longer than the lease: without a heartbeat idle_session_timeout would end the session
        try (InboxWorker worker = InboxWorker.builder().dataSource(postgres.database().dataSource()).schema(schema)
                .consumer(consumer).name("idle").lanes(2).pollInterval(Duration.ofSeconds(10))
                .leaseTimeout(Duration.ofSeconds(1)).handlerTimeout(Duration.ofMillis(400))
                .handler("Show", (c, e) -> {
                    try (Statement st = c.createStatement()) {
                        for (String name : List.of("statement_timeout", "lock_timeout",
                                "idle_in_transaction_session_timeout", "idle_session_timeout", "tcp_user_timeout",
                                "application_name", "transaction_isolation")) {
                            try (ResultSet rs = st.executeQuery("SHOW " + name)) {
                                rs.next();
                                seen.put(name, rs.getString(1));
                            }
                        }
                    }
                }).build().start()) {
            await().atMost(Duration.ofSeconds(10)).until(() -> worker.stats().lanesOwned() == 2);
            Thread.sleep(3_500); // three and a half leases of idling: each lane talks every third of the lease
            assertThat(worker.stats().loopErrors()).as("lanes that lost their session while idle").isZero();
            assertThat(worker.stats().lanesOwned()).isEqualTo(2);
            assertThat(postgres.database().queryLong("SELECT count(*) FROM pg_stat_activity WHERE application_name"
                    + " LIKE 'txoutbox-inbox idle-%'")).isEqualTo(2);
            try (Connection c = postgres.database().connect()) {
                c.setAutoCommit(false);
                Inbox.create(schema).receive(c, consumer, List.of(InboxMessage.builder(UUID.randomUUID()).key("k")
                        .eventType("Show").payload("x".getBytes(StandardCharsets.UTF_8)).build()));
                c.commit();
            }
            worker.nudge();
            await().atMost(Duration.ofSeconds(5)).until(() -> worker.stats().processed() == 1);
            assertThat(worker.stats().loopErrors()).isZero();
        }
        assertThat(seen).containsEntry("statement_timeout", "400ms").containsEntry("lock_timeout", "400ms")
                .containsEntry("idle_in_transaction_session_timeout", "1s").containsEntry("idle_session_timeout", "1s")
                .containsEntry("tcp_user_timeout", "1000").containsEntry("transaction_isolation", "read committed");
        assertThat(seen.get("application_name")).startsWith("txoutbox-inbox idle-");
    }
}
