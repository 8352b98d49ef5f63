package io.txoutbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.txoutbox.testing.postgres.PostgresExtension;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

@Tag("pg-version")
class InboxOnceIT {

    @RegisterExtension
    static final PostgresExtension postgres = new PostgresExtension();

    private static Inbox inbox;

    @BeforeAll
    static void migrate() {
        OutboxSchema schema = OutboxSchema.builder().schema(postgres.database().schema()).build();
        schema.migrate(postgres.database().dataSource());
        inbox = Inbox.create(schema);
        postgres.database().execute("CREATE TABLE effect (consumer text, event_id uuid, note text)");
    }

    private static Inbox.Outcome handle(String consumer, UUID eventId, Inbox.AggregateVersion version)
            throws Exception {
        try (Connection c = postgres.database().connect()) {
            c.setAutoCommit(false);
            Inbox.Outcome outcome = inbox.once(c, consumer, eventId, version, conn -> {
                try (PreparedStatement ps = conn.prepareStatement("INSERT INTO effect VALUES (?, ?, ?)")) {
                    ps.setString(1, consumer);
                    ps.setObject(2, eventId);
                    ps.setString(3, version == null ? null : Long.toString(version.version()));
                    ps.executeUpdate();
                }
            });
            c.commit();
            return outcome;
        }
    }

    private static long effects(UUID eventId) {
        return postgres.database().queryLong("SELECT count(*) FROM effect WHERE event_id = '" + eventId + "'");
    }

    @Test
    void a_redelivered_event_is_applied_once_and_the_repeat_is_reported() throws Exception {
        UUID id = UUID.randomUUID();
        assertThat(handle("billing", id, null)).isEqualTo(Inbox.Outcome.APPLIED);
        assertThat(handle("billing", id, null)).isEqualTo(Inbox.Outcome.DUPLICATE);
        assertThat(handle("billing", id, null)).isEqualTo(Inbox.Outcome.DUPLICATE);
        assertThat(effects(id)).isEqualTo(1);
    }

    @Test
    void two_consumers_sharing_the_database_each_apply_the_event() throws Exception {
        UUID id = UUID.randomUUID();
        assertThat(handle("billing", id, null)).isEqualTo(Inbox.Outcome.APPLIED);
        assertThat(handle("shipping", id, null)).isEqualTo(Inbox.Outcome.APPLIED);
        assertThat(effects(id)).isEqualTo(2);
    }

    @Test
    void a_rolled_back_transaction_leaves_no_dedupe_row_so_the_redelivery_applies() throws Exception {
        UUID id = UUID.randomUUID();
        try (Connection c = postgres.database().connect()) {
            c.setAutoCommit(false);
            assertThatThrownBy(() -> inbox.once(c, "billing", id, conn -> {
                throw new IllegalStateException("handler bug");
            })).isInstanceOf(IllegalStateException.class);
            c.rollback();
        }
        assertThat(handle("billing", id, null)).isEqualTo(Inbox.Outcome.APPLIED);
        assertThat(effects(id)).isEqualTo(1);
    }

    @Test
    void the_version_check_skips_equal_and_lower_versions_of_an_aggregate() throws Exception {
        String order = "o-" + UUID.randomUUID();
        UUID v2 = UUID.randomUUID();
        UUID v1 = UUID.randomUUID();
        UUID v2again = UUID.randomUUID();
        UUID v3 = UUID.randomUUID();
        assertThat(handle("billing", v2, Inbox.version("Order", order, 2))).isEqualTo(Inbox.Outcome.APPLIED);
        assertThat(handle("billing", v1, Inbox.version("Order", order, 1))).isEqualTo(Inbox.Outcome.STALE_VERSION);
        assertThat(handle("billing", v2again, Inbox.version("Order", order, 2)))
                .isEqualTo(Inbox.Outcome.STALE_VERSION);
        assertThat(handle("billing", v3, Inbox.version("Order", order, 3))).isEqualTo(Inbox.Outcome.APPLIED);
        // another aggregate and another consumer keep their own versions
        assertThat(handle("billing", UUID.randomUUID(), Inbox.version("Order", order + "x", 1)))
                .isEqualTo(Inbox.Outcome.APPLIED);
        assertThat(handle("shipping", UUID.randomUUID(), Inbox.version("Order", order, 1)))
                .isEqualTo(Inbox.Outcome.APPLIED);
        assertThat(effects(v1) + effects(v2again)).isZero();
        assertThat(effects(v2) + effects(v3)).isEqualTo(2);
    }

    @Test
    void a_stale_event_replayed_after_its_dedupe_row_was_purged_is_still_rejected_by_its_version() throws Exception {
        String order = "o-" + UUID.randomUUID();
        UUID old = UUID.randomUUID();
        assertThat(handle("billing", old, Inbox.version("Order", order, 1))).isEqualTo(Inbox.Outcome.APPLIED);
        assertThat(handle("billing", UUID.randomUUID(), Inbox.version("Order", order, 2)))
                .isEqualTo(Inbox.Outcome.APPLIED);
        postgres.database().execute("DELETE FROM processed_event WHERE event_id = '" + old + "'");
        assertThat(handle("billing", old, Inbox.version("Order", order, 1))).isEqualTo(Inbox.Outcome.STALE_VERSION);
        assertThat(effects(old)).isEqualTo(1);
    }

    @Test
    void concurrent_deliveries_of_one_event_apply_it_once() throws Exception {
        UUID id = UUID.randomUUID();
        int racers = 4;
        CountDownLatch go = new CountDownLatch(1);
        ExecutorService pool = Executors.newFixedThreadPool(racers);
        try {
            List<Future<Inbox.Outcome>> results = new ArrayList<>();
            for (int i = 0; i < racers; i++) {
                results.add(pool.submit(() -> {
                    go.await();
                    return handle("billing", id, null);
                }));
            }
            go.countDown();
            List<Inbox.Outcome> outcomes = new ArrayList<>();
            for (Future<Inbox.Outcome> f : results) {
                outcomes.add(f.get(60, TimeUnit.SECONDS));
            }
            assertThat(outcomes).containsOnlyOnce(Inbox.Outcome.APPLIED);
            assertThat(outcomes).filteredOn(o -> o == Inbox.Outcome.DUPLICATE).hasSize(racers - 1);
        } finally {
            pool.shutdownNow();
        }
        assertThat(effects(id)).isEqualTo(1);
    }

    @Test
    void an_autocommit_connection_is_refused_with_the_fix() throws Exception {
        try (Connection c = postgres.database().connect()) {
            assertThatThrownBy(() -> inbox.once(c, "billing", UUID.randomUUID(), conn -> { }))
                    .isInstanceOf(OutboxException.class).hasMessageContaining("setAutoCommit(false)");
        }
    }

    @Test
    void receive_drops_redeliveries_per_consumer() throws Exception {
        UUID a = UUID.randomUUID();
        UUID b = UUID.randomUUID();
        List<InboxMessage> batch = List.of(InboxMessage.builder(a).key("k").eventType("T").build(),
                InboxMessage.builder(b).key("k").eventType("T").headers(java.util.Map.of("q\"uote", "x\u0000y\n"))
                        .build(),
                InboxMessage.builder(a).key("k").eventType("T").build());
        try (Connection c = postgres.database().connect()) {
            c.setAutoCommit(false);
            assertThat(inbox.receive(c, "r1", batch)).isEqualTo(2);
            assertThat(inbox.receive(c, "r1", batch)).isZero();
            assertThat(inbox.receive(c, "r2", batch)).isEqualTo(2);
            c.commit();
        }
        assertThat(postgres.database().queryLong("SELECT count(*) FROM inbox_event WHERE consumer IN ('r1', 'r2')"))
                .isEqualTo(4);
        assertThat(postgres.database().queryLong("SELECT min(id) FROM inbox_event WHERE consumer = 'r1' AND event_id = '"
                + a + "'")).isLessThan(postgres.database().queryLong(
                        "SELECT min(id) FROM inbox_event WHERE consumer = 'r1' AND event_id = '" + b + "'"));
    }
}
