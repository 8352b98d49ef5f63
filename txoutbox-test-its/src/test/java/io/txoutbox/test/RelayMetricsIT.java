package io.txoutbox.test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.txoutbox.EventFilter;
import io.txoutbox.FailurePolicy;
import io.txoutbox.Outbox;
import io.txoutbox.OutboxAdmin;
import io.txoutbox.OutboxHealth;
import io.txoutbox.OutboxMessage;
import io.txoutbox.OutboxSchema;
import io.txoutbox.OutboxStatus;
import io.txoutbox.PollingRelay;
import io.txoutbox.RetryPolicy;
import io.txoutbox.micrometer.MicrometerRelayListener;
import io.txoutbox.micrometer.OutboxMeterBinder;
import io.txoutbox.spi.OutboxRecord;
import io.txoutbox.spi.RelayListener;
import io.txoutbox.spi.SendResult;
import io.txoutbox.spi.Transport;
import io.txoutbox.testing.postgres.PostgresExtension;
import io.txoutbox.testing.postgres.TestDatabase;
import io.txoutbox.testing.postgres.TestPostgres;
import java.sql.Connection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import org.junit.jupiter.api.extension.RegisterExtension;

/** Metrics, gauges, health and status of the polling relay, against a real PostgreSQL and the in-memory transport. */
class RelayMetricsIT {

    @RegisterExtension
    static final PostgresExtension postgres = new PostgresExtension();

    private static final Duration WAIT = Duration.ofSeconds(30);

    private TestDatabase db;
    private OutboxSchema schema;
    private InMemoryTransport transport;
    private SimpleMeterRegistry registry;
    private final List<AutoCloseable> closeables = new ArrayList<>();

    @BeforeEach
    void setUp(TestInfo info) {
        db = postgres.database();
        schema = schema(db, info);
        transport = new InMemoryTransport();
        registry = new SimpleMeterRegistry();
    }

    private static OutboxSchema schema(TestDatabase db, TestInfo info) {
        String name = info.getTestMethod().orElseThrow().getName();
        OutboxSchema s = OutboxSchema.builder().schema(db.schema()).outboxTable("mt_" + Math.abs(name.hashCode()))
                .shards(8).build();
        s.migrate(db.dataSource());
        return s;
    }

    @AfterEach
    void tearDown() throws Exception {
        for (int i = closeables.size() - 1; i >= 0; i--) {
            closeables.get(i).close();
        }
        registry.close();
    }

    private PollingRelay.Builder relay() {
        return PollingRelay.builder().dataSource(db.dataSource()).schema(schema).transport(transport).lanes(2)
                .batchSize(100).pollInterval(Duration.ofMillis(50)).outageBackoffMax(Duration.ofMillis(300))
                .retry(RetryPolicy.defaults().withBackoff(Duration.ofMillis(50), Duration.ofMillis(200)));
    }

    private PollingRelay start(PollingRelay.Builder builder) {
        PollingRelay r = builder.build();
        closeables.add(r);
        return r.start();
    }

    private static OutboxMessage event(String topic, String key, String type) {
        return OutboxMessage.builder().topic(topic).aggregate("Order", key).eventType(type).jsonPayload("{}").build();
    }

    private static List<UUID> write(TestDatabase db, Outbox outbox, OutboxMessage... messages) throws Exception {
        try (Connection c = db.connect()) {
            c.setAutoCommit(false);
            List<UUID> ids = outbox.publish(c, messages);
            c.commit();
            return ids;
        }
    }

    private double counter(String name, String... tags) {
        var c = registry.find(name).tags(tags).counter();
        return c == null ? 0 : c.count();
    }

    private Double gauge(String name, String... tags) {
        var g = registry.find(name).tags(tags).gauge();
        return g == null ? null : g.value();
    }

    @Test
    void micrometer_counters_move_as_events_are_published_and_fail() throws Exception {
        PollingRelay relay = start(relay().name("metrics").failurePolicy(FailurePolicy.PARK_KEY)
                .listener(new MicrometerRelayListener(registry)));
        Outbox outbox = Outbox.builder().schema(schema).afterPublish(relay::nudge).build();
        transport.failWhen(r -> r.eventType().equals("Poison"), SendResult.Kind.PERMANENT);
        write(db, outbox, event("orders", "o1", "E1"), event("orders", "o2", "E1"), event("orders", "o3", "E1"),
                event("payments", "p1", "E1"), event("payments", "p2", "E1"), event("orders", "bad", "Poison"));

        await().atMost(WAIT).until(() -> counter(MicrometerRelayListener.PUBLISHED, "topic", "orders") == 3
                && counter(MicrometerRelayListener.PUBLISHED, "topic", "payments") == 2
                && counter(MicrometerRelayListener.PARKED) == 1);
        assertThat(counter(MicrometerRelayListener.FAILURES, "kind", "permanent")).isEqualTo(1);
        assertThat(counter(MicrometerRelayListener.FAILURES, "kind", "unavailable")).isZero();
        assertThat(counter(MicrometerRelayListener.FAILURES, "kind", "database")).isZero();
        assertThat(counter(MicrometerRelayListener.DEAD)).isZero();
        var latency = registry.find(MicrometerRelayListener.COMMIT_TO_ACK).tags("relay", "metrics").timer();
        assertThat(latency).isNotNull();
        assertThat(latency.count()).isEqualTo(5);
        var batchSize = registry.find(MicrometerRelayListener.BATCH_SIZE).summary();
        assertThat(batchSize.count()).isPositive();
        assertThat(batchSize.totalAmount()).as("every event was in a batch once").isEqualTo(6);
        for (String phase : List.of("claim", "send", "mark")) {
            assertThat(registry.find(MicrometerRelayListener.BATCH_DURATION).tags("relay", "metrics", "phase", phase)
                    .timer().count()).isEqualTo((long) batchSize.count());
        }
        // low cardinality: relay and topic only where asked, never an event id or key
        for (Meter m : registry.getMeters()) {
            assertThat(m.getId().getName()).startsWith("txoutbox.relay.");
            assertThat(m.getId().getTags()).extracting(t -> t.getKey())
                    .containsAnyOf("relay").isSubsetOf("relay", "topic", "kind", "phase");
        }

        // the broker goes down: failures are counted as unavailable, nothing more is parked
        transport.goDown();
        write(db, outbox, event("orders", "o4", "E1"));
        await().atMost(WAIT).until(() -> counter(MicrometerRelayListener.FAILURES, "kind", "unavailable") >= 2);
        transport.comeUp();
        await().atMost(WAIT).until(() -> counter(MicrometerRelayListener.PUBLISHED, "topic", "orders") == 4);
        assertThat(counter(MicrometerRelayListener.PARKED)).isEqualTo(1);
    }

    @Test
    void a_listener_that_throws_never_stops_the_relay() throws Exception {
        AtomicLong calls = new AtomicLong();
        RelayListener broken = new RelayListener() {
            @Override
            public void batchCompleted(int size, long claimNanos, long sendNanos, long markNanos) {
                calls.incrementAndGet();
                throw new IllegalStateException("broken listener");
            }

            @Override
            public void published(String topic, long commitToAckNanos) {
                calls.incrementAndGet();
                throw new IllegalStateException("broken listener");
            }
        };
        PollingRelay relay = start(relay().listener(broken));
        Outbox outbox = Outbox.builder().schema(schema).afterPublish(relay::nudge).build();
        for (int i = 0; i < 10; i++) {
            UUID id = write(db, outbox, event("orders", "k" + i, "E")).get(0);
            transport.awaitDelivered(id, WAIT);
        }
        await().atMost(WAIT).until(() -> relay.stats().published() == 10);
        assertThat(calls.get()).as("the listener was called and threw every time").isGreaterThanOrEqualTo(20);
        assertThat(relay.stats().loopErrors()).isZero();
        DeliveredEvents.of(transport.delivered()).assertNoDuplicates();
    }

    @Test
    void event_age_rises_while_the_transport_is_down_and_falls_after_and_health_flips_and_recovers()
            throws Exception {
        PollingRelay relay = start(relay());
        OutboxMeterBinder gauges = new OutboxMeterBinder(db.dataSource(), schema, Duration.ofSeconds(1));
        closeables.add(gauges);
        gauges.bindTo(registry);
        OutboxHealth health = OutboxHealth.builder().dataSource(db.dataSource()).schema(schema).relay(relay)
                .maxEventAge(Duration.ofSeconds(1)).build();
        Outbox outbox = Outbox.builder().schema(schema).afterPublish(relay::nudge).build();
        String outboxTag = schema.schema() + "." + schema.outboxTable();
        assertThat(health.check().isUp()).isTrue();

        transport.goDown();
        List<UUID> ids = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            ids.addAll(write(db, outbox, event("orders", "k" + i, "E")));
        }
        await().atMost(WAIT).until(() -> {
            Double age = gauge(OutboxMeterBinder.EVENT_AGE, "outbox", outboxTag, "topic", "orders");
            return age != null && age > 1.0;
        });
        assertThat(gauge(OutboxMeterBinder.PENDING, "outbox", outboxTag, "topic", "orders")).isEqualTo(5.0);
        await().atMost(WAIT).until(() -> !health.check().isUp());
        OutboxHealth.Result down = health.check();
        assertThat(down.up()).isFalse();
        assertThat(down.toString()).as("what operators read").startsWith("DOWN [").contains("topic orders: ");
        assertThat(down.reasons()).anySatisfy(r -> assertThat(r).contains("topic orders").contains("5 pending"));
        assertThat(down.backlog().oldestPendingAge()).isGreaterThan(Duration.ofSeconds(1));

        transport.comeUp();
        ids.forEach(id -> transport.awaitDelivered(id, WAIT));
        await().atMost(WAIT).until(() -> Double.valueOf(0.0)
                .equals(gauge(OutboxMeterBinder.EVENT_AGE, "outbox", outboxTag, "topic", "orders")));
        assertThat(gauge(OutboxMeterBinder.PENDING, "outbox", outboxTag, "topic", "orders")).isZero();
        await().atMost(WAIT).until(() -> health.check().isUp());
        assertThat(health.check().reasons()).isEmpty();
    }

    @Test
    void health_goes_down_when_parked_keys_grow_and_when_a_lane_stalls() throws Exception {
        CountDownLatch release = new CountDownLatch(1);
        AtomicBoolean blocking = new AtomicBoolean();
        Transport stalling = new Transport() {
            @Override
            public CompletionStage<List<SendResult>> send(String lane, List<OutboxRecord> batch) {
                if (blocking.get() && batch.stream().anyMatch(r -> r.eventType().equals("Stuck"))) {
                    try { // a transport that blocks its caller instead of returning a stage: no timeout saves it
                        release.await(1, TimeUnit.MINUTES);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                }
                return transport.send(lane, batch);
            }
        };
        PollingRelay relay = start(relay().transport(stalling).lanes(1).sendTimeout(Duration.ofSeconds(1)));
        OutboxHealth health = OutboxHealth.builder().dataSource(db.dataSource()).schema(schema).relay(relay)
                .maxEventAge(Duration.ofMinutes(5)).maxLoopStall(Duration.ofMillis(1500)).build();
        Outbox outbox = Outbox.builder().schema(schema).afterPublish(relay::nudge).build();
        await().atMost(WAIT).until(() -> relay.stats().lanesOwned() == 1);
        assertThat(health.check().isUp()).isTrue();

        transport.failWhen(r -> r.eventType().equals("Poison"), SendResult.Kind.PERMANENT);
        write(db, outbox, event("orders", "k1", "Poison"));
        OutboxAdmin admin = OutboxAdmin.create(db.dataSource(), schema);
        await().atMost(WAIT).until(() -> admin.list(EventFilter.parked(), 0, 10).size() == 1);
        OutboxHealth.Result grew = health.check();
        assertThat(grew.isUp()).isFalse();
        assertThat(grew.reasons()).singleElement().asString().contains("parked keys grew from 0 to 1");
        assertThat(health.check().isUp()).as("no further growth since the last check").isTrue();

        blocking.set(true);
        UUID stuck = write(db, outbox, event("orders", "k2", "Stuck")).get(0);
        await().atMost(WAIT).until(() -> !health.check().isUp());
        assertThat(health.check().reasons()).anySatisfy(r -> assertThat(r).contains("lane 0")
                .contains("has not completed a loop"));
        release.countDown();
        transport.awaitDelivered(stuck, WAIT);
        await().atMost(WAIT).until(() -> health.check().isUp());
    }

    @Test
    void health_builder_names_the_property_at_fault() {
        PollingRelay relay = relay().build();
        closeables.add(relay);
        assertThat(org.assertj.core.api.Assertions.catchThrowable(() -> OutboxHealth.builder()
                .dataSource(db.dataSource()).schema(schema).relay(relay).maxLoopStall(Duration.ofSeconds(10))
                .build())).hasMessageContaining("health.maxLoopStall").hasMessageContaining("sendTimeout");
        assertThat(org.assertj.core.api.Assertions.catchThrowable(() -> OutboxHealth.builder().build()))
                .hasMessageContaining("health.dataSource");
        assertThat(org.assertj.core.api.Assertions.catchThrowable(() -> new OutboxMeterBinder(db.dataSource(),
                schema, Duration.ofMillis(10)))).hasMessageContaining("metrics.interval");
        assertThat(org.assertj.core.api.Assertions.catchThrowable(() -> relay().listener(null).build()))
                .hasMessageContaining("relay.listener");
    }

    @Test
    void status_snapshot_matches_the_table() throws Exception {
        PollingRelay relay = start(relay());
        transport.goDown(); // everything stays pending
        await().atMost(WAIT).until(() -> relay.stats().lanesOwned() == 2);
        Outbox outbox = Outbox.builder().schema(schema).build();
        List<UUID> ids = write(db, outbox, event("orders", "o1", "E"), event("orders", "o2", "E"),
                event("orders", "o3", "E"), event("payments", "p1", "E"), event("payments", "p2", "E"),
                event("audit", "a1", "E"));
        String t = schema.qualifiedOutboxTable();
        db.execute("UPDATE " + t + " SET state = 'PARKED' WHERE event_id = '" + ids.get(0) + "'",
                "UPDATE " + t + " SET state = 'DEAD' WHERE event_id IN ('" + ids.get(3) + "', '" + ids.get(5) + "')");

        OutboxStatus status = OutboxStatus.snapshot(db.dataSource(), schema);

        assertThat(status.pending()).isEqualTo(db.queryLong("SELECT count(*) FROM " + t + " WHERE state = 'PENDING'"))
                .isEqualTo(3);
        Map<String, Long> byTopic = status.backlog().topics().stream()
                .collect(Collectors.toMap(OutboxStatus.TopicStatus::topic, OutboxStatus.TopicStatus::pending));
        assertThat(byTopic).containsExactlyInAnyOrderEntriesOf(Map.of("orders", 2L, "payments", 1L));
        assertThat(status.parkedKeys()).isEqualTo(1);
        assertThat(status.deadEvents()).isEqualTo(2);
        assertThat(status.backlog().topics()).allSatisfy(ts -> assertThat(ts.oldestPendingAge())
                .isGreaterThanOrEqualTo(Duration.ZERO));
        assertThat(status.pendingByShard().values().stream().mapToLong(Long::longValue).sum()).isEqualTo(3);
        assertThat(status.lanes()).extracting(OutboxStatus.LaneOwner::lane).containsExactly(0, 1);
        assertThat(status.instances()).containsExactly(Map.entry(relay.instanceId(), List.of(0, 1)));
        assertThat(status.toText()).contains("pending: 3").contains("topic orders: 2 pending")
                .contains("topic payments: 1 pending").contains("parked keys: 1").contains("dead events: 2")
                .contains(relay.instanceId() + ": lanes [0, 1]");
    }

    @Test
    void commit_to_ack_latency_counts_from_the_commit_when_the_server_tracks_commit_timestamps(TestInfo info)
            throws Exception {
        try (TestPostgres server = TestPostgres.startEmbedded(Map.of("track_commit_timestamp", "on"));
                TestDatabase tracked = server.newDatabase("commit_ts")) {
            OutboxSchema trackedSchema = schema(tracked, info);
            Outbox outbox = Outbox.builder().schema(trackedSchema).build();
            // the event waits in the table before any relay runs: that wait is part of commit→ack
            write(tracked, outbox, event("orders", "k1", "E"));
            long committedAt = System.nanoTime();
            await().atMost(WAIT).until(() -> System.nanoTime() - committedAt > TimeUnit.SECONDS.toNanos(1));
            ConcurrentLinkedQueue<Long> latencies = new ConcurrentLinkedQueue<>();
            try (PollingRelay relay = PollingRelay.builder().dataSource(tracked.dataSource()).schema(trackedSchema)
                    .transport(transport).lanes(1).pollInterval(Duration.ofMillis(50))
                    .listener(new RelayListener() {
                        @Override
                        public void published(String topic, long commitToAckNanos) {
                            latencies.add(commitToAckNanos);
                        }
                    }).build().start()) {
                await().atMost(WAIT).until(() -> latencies.size() == 1);
            }
            assertThat(latencies.peek()).as("measured from the commit, not from the relay's claim")
                    .isGreaterThanOrEqualTo(TimeUnit.SECONDS.toNanos(1));
        }
    }

    @Test
    void without_commit_timestamps_an_event_that_failed_before_counts_from_its_created_at() throws Exception {
        assertThat(db.queryLong("SELECT CASE WHEN current_setting('track_commit_timestamp') = 'off' THEN 1 END"))
                .as("the shared test server runs without track_commit_timestamp").isEqualTo(1);
        ConcurrentLinkedQueue<Long> latencies = new ConcurrentLinkedQueue<>();
        PollingRelay relay = start(relay().listener(new RelayListener() {
            @Override
            public void published(String topic, long commitToAckNanos) {
                latencies.add(commitToAckNanos);
            }
        }));
        Outbox outbox = Outbox.builder().schema(schema).afterPublish(relay::nudge).build();
        transport.goDown(); // the first sends fail: the row gets a last_error
        UUID id = write(db, outbox, event("orders", "k1", "E")).get(0);
        // by the database's clock, as the relay measures it: the row failed and is more than a second old
        await().atMost(WAIT).until(() -> db.queryLong("SELECT count(*) FROM " + schema.qualifiedOutboxTable()
                + " WHERE last_error IS NOT NULL AND clock_timestamp() - created_at > interval '1 second'") == 1);
        transport.comeUp();
        transport.awaitDelivered(id, WAIT);
        await().atMost(WAIT).until(() -> latencies.size() == 1);
        assertThat(latencies.peek()).as("from created_at, through the outage")
                .isGreaterThanOrEqualTo(TimeUnit.SECONDS.toNanos(1));
    }
}
