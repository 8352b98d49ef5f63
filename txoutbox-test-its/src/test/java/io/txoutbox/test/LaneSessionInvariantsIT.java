package io.txoutbox.test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.txoutbox.Outbox;
import io.txoutbox.OutboxMessage;
import io.txoutbox.OutboxSchema;
import io.txoutbox.OutboxStatus;
import io.txoutbox.PollingRelay;
import io.txoutbox.RetryPolicy;
import io.txoutbox.spi.OutboxRecord;
import io.txoutbox.spi.SendResult;
import io.txoutbox.spi.Transport;
import io.txoutbox.spi.TransportLane;
import io.txoutbox.testing.postgres.PostgresExtension;
import io.txoutbox.testing.postgres.TestDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * What the lane's session is for, through a real relay:
 * <ul>
 *   <li>its lock, claim, mark and failure record run on one session, so a lane whose session PostgreSQL ended (a
 *       zombie) can neither mark nor record failures: its batch stays PENDING for the lane's next owner;</li>
 *   <li>one batch in flight per lane, also after a send timeout;</li>
 *   <li>the advisory lock keys a running relay holds in {@code pg_locks} are the golden numbers (they are the
 *       contract between relay versions), and its lanes' transport identities are the installation's.</li>
 * </ul>
 */
class LaneSessionInvariantsIT {

    @RegisterExtension
    static final PostgresExtension postgres = new PostgresExtension();

    private static final Duration WAIT = Duration.ofSeconds(30);

    private final TestDatabase db = postgres.database();
    private final InMemoryTransport memory = new InMemoryTransport();
    private PollingRelay relay;
    private String dropSchema;

    @AfterEach
    void tearDown() {
        if (relay != null) {
            relay.close();
        }
        if (dropSchema != null) {
            db.execute("DROP SCHEMA IF EXISTS " + dropSchema + " CASCADE");
        }
    }

    private OutboxSchema migrate(String schemaName, String table) {
        OutboxSchema schema = OutboxSchema.builder().schema(schemaName).outboxTable(table).shards(4).build();
        schema.migrate(db.dataSource());
        return schema;
    }

    private PollingRelay.Builder relay(OutboxSchema schema, Transport transport, String name) {
        return PollingRelay.builder().dataSource(db.dataSource()).schema(schema).transport(transport).name(name)
                .lanes(1).batchSize(100).pollInterval(Duration.ofMillis(50)).leaseTimeout(Duration.ofSeconds(3))
                .outageBackoffMax(Duration.ofMillis(200))
                .retry(RetryPolicy.defaults().withBackoff(Duration.ofHours(1), Duration.ofHours(1)).withJitter(0));
    }

    private PollingRelay start(PollingRelay.Builder builder, int lanes) {
        relay = builder.build();
        relay.start();
        await().atMost(WAIT).until(() -> relay.stats().lanesOwned() == lanes);
        return relay;
    }

    private List<UUID> write(OutboxSchema schema, String... keys) throws Exception {
        Outbox outbox = Outbox.builder().schema(schema).build();
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

    private record Row(String state, int attempts, boolean published, String lastError) {
    }

    private Map<UUID, Row> rows(OutboxSchema schema) throws Exception {
        Map<UUID, Row> out = new ConcurrentHashMap<>();
        try (Connection c = db.connect(); PreparedStatement ps = c.prepareStatement("SELECT event_id, state, attempts,"
                + " published_at IS NOT NULL, last_error FROM " + schema.qualifiedOutboxTable());
                ResultSet rs = ps.executeQuery()) {
            while (rs.next()) {
                out.put((UUID) rs.getObject(1), new Row(rs.getString(2), rs.getInt(3), rs.getBoolean(4),
                        rs.getString(5)));
            }
        }
        return out;
    }

    private Map<UUID, Long> deliveries(List<UUID> ids) {
        Map<UUID, Long> counts = memory.delivered("orders").stream()
                .collect(Collectors.groupingBy(OutboxRecord::eventId, Collectors.counting()));
        return ids.stream().collect(Collectors.toMap(Function.identity(), id -> counts.getOrDefault(id, 0L)));
    }

    /** Ends the lane's session as PostgreSQL would (an operator, a failover, the lease's idle timeout). */
    private void terminateLaneSession(String laneName) {
        long ended = db.queryLong("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
                + " WHERE application_name LIKE 'txoutbox-relay " + laneName + " %'");
        assertThat(ended).as("sessions of lane " + laneName + " ended").isEqualTo(1);
    }

    /**
     * Sends through {@link #memory}; send number n (from 0) blocks in the send call until {@code release(n)} when it
     * is gated, and then answers {@code failAs} for every record of that send when set.
     */
    private final class Gated implements Transport {
        final CountDownLatch[] started = {new CountDownLatch(1), new CountDownLatch(1)};
        final CountDownLatch[] gates = {new CountDownLatch(1), new CountDownLatch(1)};
        final AtomicInteger sends = new AtomicInteger();
        final SendResult.Kind failFirstAs;

        Gated(SendResult.Kind failFirstAs) {
            this.failFirstAs = failFirstAs;
        }

        void release(int n) {
            gates[n].countDown();
        }

        @Override
        public CompletionStage<List<SendResult>> send(String lane, List<OutboxRecord> batch) {
            int n = sends.getAndIncrement();
            if (n < gates.length) {
                started[n].countDown();
                try {
                    gates[n].await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
            if (n == 0 && failFirstAs != null) {
                List<SendResult> failed = new ArrayList<>();
                for (int i = 0; i < batch.size(); i++) {
                    failed.add(new SendResult.Failed(failFirstAs, new IllegalStateException("injected")));
                }
                return CompletableFuture.completedFuture(failed);
            }
            return memory.send(lane, batch);
        }
    }

    private void zombie(SendResult.Kind firstSendFailsAs) throws Exception {
        OutboxSchema schema = migrate(db.schema(), "zs_" + (firstSendFailsAs == null ? "mark" : "fail"));
        Gated transport = new Gated(firstSendFailsAs);
        try {
            start(relay(schema, transport, "zs"), 1);
            List<UUID> ids = write(schema, "a", "b", "c");
            assertThat(transport.started[0].await(30, TimeUnit.SECONDS)).as("the first send began").isTrue();
            terminateLaneSession("zs-0");
            transport.release(0); // the zombie's send returns now: its mark or failure record must not land
            // until the zombie's mark or failure record was refused (at once, when its send returns), or landed;
            // a mark that neither lands nor is refused shows as a timeout, so this wait is short
            await().atMost(Duration.ofSeconds(10)).until(() -> relay.stats().fencedMarks() >= 1 || rows(schema).values().stream()
                    .anyMatch(r -> !r.state().equals("PENDING") || r.attempts() > 0 || r.lastError() != null));
            assertThat(relay.stats().fencedMarks()).as("the zombie's write refused").isEqualTo(1);
            assertThat(transport.started[1].await(30, TimeUnit.SECONDS)).as("the next owner sends again").isTrue();
            Map<UUID, Row> between = rows(schema);
            assertThat(between.values()).as("rows while the next owner's send is in flight").allSatisfy(r -> {
                assertThat(r.state()).isEqualTo("PENDING");
                assertThat(r.published()).as("published_at set").isFalse();
                assertThat(r.attempts()).as("attempts").isZero();
                assertThat(r.lastError()).as("last_error").isNull();
            });
            transport.release(1);
            await().atMost(WAIT).until(() -> OutboxStatus.pendingCount(db.dataSource(), schema) == 0);
            assertThat(rows(schema).values()).allSatisfy(r -> {
                assertThat(r.state()).isEqualTo("PUBLISHED");
                assertThat(r.attempts()).as("attempts: the zombie recorded no failure").isZero();
            });
            long expected = firstSendFailsAs == null ? 2 : 1; // the zombie's send delivered, or failed, once
            assertThat(deliveries(ids)).as("deliveries per event").allSatisfy((id, n) -> assertThat(n)
                    .isEqualTo(expected));
            assertThat(relay.stats().fencedMarks()).as("marks refused after the session ended").isEqualTo(1);
        } finally {
            transport.release(0);
            transport.release(1);
        }
    }

    @Test
    void a_zombie_lane_cannot_mark_its_delivered_batch_and_the_next_owner_delivers_it_again() throws Exception {
        zombie(null);
    }

    @Test
    void a_zombie_lane_cannot_record_the_failures_of_its_batch() throws Exception {
        zombie(SendResult.Kind.RETRIABLE);
    }

    /**
     * A transport whose first send never completes by itself: after the send timeout the batch counts as undelivered,
     * but the lane sends nothing more while that send is unresolved; once it completes, the lane goes on.
     */
    @Test
    void one_batch_in_flight_per_lane_also_after_a_send_timeout() throws Exception {
        OutboxSchema schema = migrate(db.schema(), "inflight");
        CompletableFuture<List<SendResult>> first = new CompletableFuture<>();
        AtomicInteger inFlight = new AtomicInteger();
        AtomicInteger maxInFlight = new AtomicInteger();
        List<Integer> sizes = new CopyOnWriteArrayList<>();
        Transport transport = (lane, batch) -> {
            maxInFlight.accumulateAndGet(inFlight.incrementAndGet(), Math::max);
            CompletableFuture<List<SendResult>> result = sizes.isEmpty() ? first
                    : memory.send(lane, batch).toCompletableFuture();
            sizes.add(batch.size());
            return result.whenComplete((r, e) -> inFlight.decrementAndGet());
        };
        start(relay(schema, transport, "inflight").sendTimeout(Duration.ofSeconds(1)), 1);
        List<UUID> ids = write(schema, "a", "b");
        await().atMost(WAIT).until(() -> sizes.size() == 1);
        Thread.sleep(5_000); // five send timeouts
        assertThat(sizes).as("sends while the first is unresolved").hasSize(1);
        first.complete(List.of(SendResult.delivered(), SendResult.delivered()));
        await().atMost(WAIT).until(() -> OutboxStatus.pendingCount(db.dataSource(), schema) == 0);
        assertThat(sizes.size()).as("sends after it completed").isGreaterThan(1);
        assertThat(maxInFlight.get()).as("sends in flight at once").isEqualTo(1);
        assertThat(deliveries(ids)).allSatisfy((id, n) -> assertThat(n).isEqualTo(1));
    }

    // ---- golden numbers --------------------------------------------------------------------------------------

    /** The outbox whose keys are golden: a fixed schema, the default table name. */
    private static final String GOLDEN_SCHEMA = "txoutbox_golden";
    /**
     * (classid, objid, objsubid, mode) of every advisory lock a relay named "gk" with 2 lanes holds on
     * {@code txoutbox_golden.outbox_event}, computed once from {@code relay.RelaySql.lockKey/memberKey}: lanes 0 and
     * 1 (kind 1, exclusive), the lane count 2 (kind 2, shared, one per lane session), the member key for 2 lanes and
     * cap 2 (shared).
     */
    private static final List<String> GOLDEN_LOCKS = List.of(
            "1530401325/65536/1/ExclusiveLock",
            "1530401325/65537/1/ExclusiveLock",
            "1530401325/131074/1/ShareLock",
            "1530401325/131074/1/ShareLock",
            "1530401325/805339138/1/ShareLock");

    @Test
    void a_running_relay_holds_the_golden_advisory_lock_keys_and_names_its_lanes_by_the_installation()
            throws Exception {
        dropSchema = GOLDEN_SCHEMA;
        OutboxSchema schema = OutboxSchema.builder().schema(GOLDEN_SCHEMA).build();
        assertThat(schema.outboxTable()).isEqualTo(OutboxSchema.DEFAULT_OUTBOX_TABLE);
        schema.migrate(db.dataSource());
        Set<TransportLane> lanes = ConcurrentHashMap.newKeySet();
        Transport transport = new Transport() {
            @Override
            public CompletionStage<List<SendResult>> send(String lane, List<OutboxRecord> batch) {
                return memory.send(lane, batch);
            }

            @Override
            public CompletionStage<List<SendResult>> send(TransportLane lane, List<OutboxRecord> batch) {
                lanes.add(lane);
                return memory.send(lane.name(), batch);
            }
        };
        start(PollingRelay.builder().dataSource(db.dataSource()).schema(schema).transport(transport).name("gk")
                .lanes(2).pollInterval(Duration.ofMillis(50)), 2);
        await().atMost(WAIT).until(() -> relay.stats().lanesOwned() == 2);
        List<String> held = new ArrayList<>();
        try (Connection c = db.connect(); PreparedStatement ps = c.prepareStatement("SELECT l.classid::bigint,"
                + " l.objid::bigint, l.objsubid, l.mode FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid"
                + " WHERE l.locktype = 'advisory' AND l.granted AND a.application_name LIKE 'txoutbox-relay %'"
                + " AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())");
                ResultSet rs = ps.executeQuery()) {
            while (rs.next()) {
                held.add(rs.getLong(1) + "/" + rs.getLong(2) + "/" + rs.getInt(3) + "/" + rs.getString(4));
            }
        }
        assertThat(held).as("advisory locks of the relay's sessions").containsExactlyInAnyOrderElementsOf(
                GOLDEN_LOCKS);

        // the lanes' identities for the transport (the Kafka transactional.id is built from them)
        List<UUID> ids = write(schema, "a", "b", "c", "d", "e", "f", "g", "h");
        await().atMost(WAIT).until(() -> OutboxStatus.pendingCount(db.dataSource(), schema) == 0);
        UUID installation;
        try (Connection c = db.connect(); PreparedStatement ps = c.prepareStatement("SELECT id FROM "
                + GOLDEN_SCHEMA + ".outbox_event_installation"); ResultSet rs = ps.executeQuery()) {
            assertThat(rs.next()).isTrue();
            installation = rs.getObject(1, UUID.class);
        }
        Set<String> seen = new TreeSet<>();
        for (TransportLane lane : lanes) {
            seen.add(lane.name() + " " + lane.index() + " " + lane.fencingKey());
            assertThat(lane.installationId()).isEqualTo(installation);
            assertThat(lane.deadLetter()).isFalse();
        }
        Set<String> expected = new TreeSet<>();
        for (TransportLane lane : lanes) {
            expected.add("gk-" + lane.index() + " " + lane.index() + " " + installation + "-" + lane.index());
        }
        assertThat(seen).as("lanes the transport was handed").isEqualTo(expected);
        assertThat(lanes).extracting(TransportLane::index).allSatisfy(i -> assertThat(i).isBetween(0, 1));
        assertThat(deliveries(ids)).allSatisfy((id, n) -> assertThat(n).isEqualTo(1));
    }
}
