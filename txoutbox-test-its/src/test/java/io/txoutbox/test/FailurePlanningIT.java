package io.txoutbox.test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.txoutbox.FailurePolicy;
import io.txoutbox.Outbox;
import io.txoutbox.OutboxMessage;
import io.txoutbox.OutboxSchema;
import io.txoutbox.PollingRelay;
import io.txoutbox.RetryPolicy;
import io.txoutbox.spi.OutboxRecord;
import io.txoutbox.spi.SendResult;
import io.txoutbox.spi.Transport;
import io.txoutbox.testing.postgres.PostgresExtension;
import io.txoutbox.testing.postgres.TestDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Timestamp;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * How the relay turns a batch's send results into row updates (the failure planning), characterised through the
 * database: per row its state, attempts, next_attempt_at and last_error after the mark, and what the transport was
 * handed. The transport here is scripted per event and topic (the first send of a scripted event gets its scripted
 * result, every other send is delivered); it may report a failure for a later record of a key that already failed,
 * which the relay must not let override the key's first failure.
 *
 * <p>The retry backoff is one hour (no jitter), so a row that backs off stays visibly waiting for the whole test.
 */
class FailurePlanningIT {

    @RegisterExtension
    static final PostgresExtension postgres = new PostgresExtension();

    private static final Duration WAIT = Duration.ofSeconds(30);
    private static final Duration BACKOFF = Duration.ofHours(1);

    private TestDatabase db;
    private OutboxSchema schema;
    private Outbox outbox;
    private PollingRelay relay;
    private final Scripted transport = new Scripted();

    @BeforeEach
    void setUp(TestInfo info) {
        db = postgres.database();
        String name = info.getTestMethod().orElseThrow().getName();
        schema = OutboxSchema.builder().schema(db.schema()).outboxTable("fp_" + Math.abs(name.hashCode())).shards(4)
                .build();
        schema.migrate(db.dataSource());
        outbox = Outbox.builder().schema(schema).build();
    }

    @AfterEach
    void tearDown() {
        if (relay != null) {
            relay.close();
        }
    }

    /** What the transport was handed, per send: topic and event id; the first send of a scripted event fails. */
    private static final class Scripted implements Transport {
        final Map<String, SendResult.Kind> script = new ConcurrentHashMap<>();
        final Map<String, Integer> sends = new ConcurrentHashMap<>();
        final List<String> received = new CopyOnWriteArrayList<>();

        void fail(String topic, UUID event, SendResult.Kind kind) {
            script.put(topic + "/" + event, kind);
        }

        int sent(String topic, UUID event) {
            return sends.getOrDefault(topic + "/" + event, 0);
        }

        @Override
        public CompletionStage<List<SendResult>> send(String lane, List<OutboxRecord> batch) {
            List<SendResult> results = new ArrayList<>(batch.size());
            for (OutboxRecord r : batch) {
                String id = r.topic() + "/" + r.eventId();
                received.add(id);
                int n = sends.merge(id, 1, Integer::sum);
                SendResult.Kind kind = n == 1 ? script.get(id) : null;
                results.add(kind == null ? SendResult.delivered()
                        : new SendResult.Failed(kind, new IllegalStateException("scripted " + kind)));
            }
            return CompletableFuture.completedFuture(results);
        }
    }

    private PollingRelay start(FailurePolicy policy) {
        PollingRelay.Builder b = PollingRelay.builder().dataSource(db.dataSource()).schema(schema)
                .transport(transport).name("fp").lanes(1).batchSize(100).pollInterval(Duration.ofMillis(50))
                .retry(RetryPolicy.defaults().withMaxAttempts(5).withBackoff(BACKOFF, BACKOFF).withJitter(0))
                .outageBackoffMax(Duration.ofMillis(200)).failurePolicy(policy);
        if (policy == FailurePolicy.DEAD_LETTER_AND_CONTINUE) {
            b.deadLetterTopic("dlt");
        }
        relay = b.build();
        relay.start();
        return relay;
    }

    /** Writes one event per key, in this order, in one transaction (so one claim takes them all). */
    private List<UUID> write(String... keys) throws Exception {
        List<OutboxMessage> messages = new ArrayList<>();
        for (String key : keys) {
            messages.add(OutboxMessage.builder().topic("orders").aggregate("Order", key).eventType("E")
                    .jsonPayload("{}").build());
        }
        try (Connection c = db.connect()) {
            c.setAutoCommit(false);
            List<UUID> ids = outbox.publish(c, messages.toArray(new OutboxMessage[0]));
            c.commit();
            return ids;
        }
    }

    private record Row(String state, int attempts, Instant nextAttemptAt, String lastError, Instant failedAt) {
    }

    private Row row(UUID event) throws Exception {
        try (Connection c = db.connect();
                PreparedStatement ps = c.prepareStatement("SELECT state, attempts, next_attempt_at, last_error,"
                        + " failed_at FROM " + schema.qualifiedOutboxTable() + " WHERE event_id = ?")) {
            ps.setObject(1, event);
            try (ResultSet rs = ps.executeQuery()) {
                assertThat(rs.next()).as("row of " + event).isTrue();
                Timestamp next = rs.getTimestamp(3);
                Timestamp failed = rs.getTimestamp(5);
                return new Row(rs.getString(1), rs.getInt(2), next == null ? null : next.toInstant(),
                        rs.getString(4), failed == null ? null : failed.toInstant());
            }
        }
    }

    private static void assertUntouched(Row r, String what) {
        assertThat(r.state()).as(what + ": state").isEqualTo("PENDING");
        assertThat(r.attempts()).as(what + ": attempts").isZero();
        assertThat(r.nextAttemptAt()).as(what + ": next_attempt_at").isNull();
        assertThat(r.lastError()).as(what + ": last_error").isNull();
    }

    private static void assertBacksOffAnHour(Row r, Instant before, String what) {
        assertThat(r.state()).as(what + ": state").isEqualTo("PENDING");
        assertThat(r.nextAttemptAt()).as(what + ": next_attempt_at, one backoff after the mark")
                .isAfter(before.plus(BACKOFF).minusSeconds(60)).isBefore(Instant.now().plus(BACKOFF).plusSeconds(60));
    }

    /**
     * One batch, keys in it: {@code k} (RETRIABLE, then a later row scripted PERMANENT, then one that simply goes
     * again), {@code p} (PERMANENT, then RETRIABLE), {@code c} (COLLATERAL), {@code u} (UNAVAILABLE), {@code o}
     * (delivered). Then a second round of rows for {@code k} and {@code o}.
     */
    @Test
    void the_first_failure_per_key_decides_collateral_and_unavailable_count_no_attempt_and_backoff_is_per_key()
            throws Exception {
        List<UUID> ids = write("k", "k", "k", "p", "p", "c", "u", "o", "o");
        UUID k1 = ids.get(0), k2 = ids.get(1), k3 = ids.get(2), p1 = ids.get(3), p2 = ids.get(4), c1 = ids.get(5),
                u1 = ids.get(6), o1 = ids.get(7), o2 = ids.get(8);
        transport.fail("orders", k1, SendResult.Kind.RETRIABLE);
        transport.fail("orders", k2, SendResult.Kind.PERMANENT); // a later row of a key that failed already
        transport.fail("orders", k3, SendResult.Kind.COLLATERAL);
        transport.fail("orders", p1, SendResult.Kind.PERMANENT);
        transport.fail("orders", p2, SendResult.Kind.RETRIABLE);
        transport.fail("orders", c1, SendResult.Kind.COLLATERAL);
        transport.fail("orders", u1, SendResult.Kind.UNAVAILABLE);
        Instant before = Instant.now();
        start(FailurePolicy.PARK_KEY);
        // c1 is sent again (no backoff) and u1 after the short outage backoff: both then delivered
        await().atMost(WAIT).until(() -> "PUBLISHED".equals(row(c1).state()) && "PUBLISHED".equals(row(u1).state())
                && "PUBLISHED".equals(row(o2).state()));

        assertThat(transport.received.subList(0, 9)).as("the first batch: every row, in id order")
                .containsExactlyElementsOf(ids.stream().map(id -> "orders/" + id).toList());

        Row k1Row = row(k1);
        assertBacksOffAnHour(k1Row, before, "k1, RETRIABLE");
        assertThat(k1Row.attempts()).as("k1 attempts").isEqualTo(1);
        assertThat(k1Row.lastError()).as("k1 last_error").contains("scripted RETRIABLE");
        assertUntouched(row(k2), "k2, PERMANENT after its key failed: the key's first failure decides");
        assertUntouched(row(k3), "k3, COLLATERAL behind its key's failure");

        Row p1Row = row(p1);
        assertThat(p1Row.state()).as("p1, PERMANENT under PARK_KEY").isEqualTo("PARKED");
        assertThat(p1Row.attempts()).as("p1 attempts").isEqualTo(1);
        assertThat(p1Row.failedAt()).as("p1 failed_at").isNotNull();
        assertThat(p1Row.nextAttemptAt()).as("p1 next_attempt_at").isNull();
        assertUntouched(row(p2), "p2, RETRIABLE after its key failed");

        Row c1Row = row(c1);
        assertThat(c1Row.attempts()).as("c1: COLLATERAL counts no attempt").isZero();
        assertThat(c1Row.lastError()).as("c1 last_error").isNull();
        assertThat(transport.sent("orders", c1)).as("c1 sent again").isEqualTo(2);

        Row u1Row = row(u1);
        assertThat(u1Row.attempts()).as("u1: UNAVAILABLE counts no attempt").isZero();
        assertThat(u1Row.lastError()).as("u1 last_error").startsWith("transport unavailable: ");
        assertThat(transport.sent("orders", u1)).as("u1 sent again after its backoff").isEqualTo(2);

        assertThat(row(o1).state()).isEqualTo("PUBLISHED");
        assertThat(transport.sent("orders", o1)).isEqualTo(1);

        // second round: a later row of the waiting key k is held behind its head, the other key goes on
        List<UUID> later = write("k", "o");
        UUID k4 = later.get(0), o3 = later.get(1);
        await().atMost(WAIT).until(() -> "PUBLISHED".equals(row(o3).state()));
        Thread.sleep(500); // ten more polls
        assertThat(transport.sent("orders", o3)).as("o3").isEqualTo(1);
        assertThat(transport.sent("orders", k4)).as("k4, behind its key's waiting head").isZero();
        assertUntouched(row(k4), "k4");
        for (UUID held : List.of(k2, k3, p2)) {
            assertThat(transport.sent("orders", held)).as("held rows are not sent again: " + held).isEqualTo(1);
        }
        assertThat(row(k1).attempts()).as("k1 waits: not sent again").isEqualTo(1);
        assertThat(transport.sent("orders", k1)).isEqualTo(1);
    }

    /** DEAD_LETTER_AND_CONTINUE: the event fails permanently, its dead-letter send fails too: the row stays PENDING. */
    @Test
    void a_failed_dead_letter_send_reverts_dead_to_pending_with_one_attempt_and_a_backoff() throws Exception {
        List<UUID> ids = write("d", "d", "o");
        UUID d1 = ids.get(0), d2 = ids.get(1), o1 = ids.get(2);
        transport.fail("orders", d1, SendResult.Kind.PERMANENT);
        transport.fail("orders", d2, SendResult.Kind.COLLATERAL);
        transport.fail("dlt", d1, SendResult.Kind.RETRIABLE);
        Instant before = Instant.now();
        start(FailurePolicy.DEAD_LETTER_AND_CONTINUE);
        await().atMost(WAIT).until(() -> "PUBLISHED".equals(row(o1).state()) && row(d1).attempts() == 1);
        Thread.sleep(500);
        Row d1Row = row(d1);
        assertBacksOffAnHour(d1Row, before, "d1, its dead-letter send failed");
        assertThat(d1Row.attempts()).as("d1 attempts").isEqualTo(1);
        assertThat(d1Row.lastError()).as("d1 last_error")
                .startsWith("dead-letter topic send failed; will retry: ");
        assertThat(transport.sent("orders", d1)).as("d1 sent to its topic").isEqualTo(1);
        assertThat(transport.sent("dlt", d1)).as("d1 sent to the dead-letter topic").isEqualTo(1);
        assertUntouched(row(d2), "d2, behind d1");
        assertThat(transport.sent("orders", d2)).as("d2 not sent again while d1 waits").isEqualTo(1);
        assertThat(relay.stats().deadLettered()).as("nothing counted dead-lettered").isZero();
    }
}
