package io.txoutbox.test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.txoutbox.FailurePolicy;
import io.txoutbox.Outbox;
import io.txoutbox.OutboxAdmin;
import io.txoutbox.EventFilter;
import io.txoutbox.OutboxMessage;
import io.txoutbox.OutboxRetention;
import io.txoutbox.OutboxSchema;
import io.txoutbox.OutboxStatus;
import io.txoutbox.PollingRelay;
import io.txoutbox.RetryPolicy;
import io.txoutbox.spi.OutboxRecord;
import io.txoutbox.spi.SendResult;
import io.txoutbox.testing.postgres.PostgresExtension;
import io.txoutbox.testing.postgres.TestDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Timestamp;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import org.junit.jupiter.api.extension.RegisterExtension;

/** Retention and dead-letter admin while a relay (in-memory transport) and writers run, on a real PostgreSQL. */
class OperationsWithRelayIT {

    @RegisterExtension
    static final PostgresExtension postgres = new PostgresExtension();

    private static final Duration WAIT = Duration.ofSeconds(30);
    private static final String WRITER_APP = "ops-it-writer";

    private TestDatabase db;
    private OutboxSchema schema;
    private String table;
    private InMemoryTransport transport;
    private OutboxAdmin admin;
    private final List<PollingRelay> relays = new ArrayList<>();
    private ExecutorService threads;

    @BeforeEach
    void setUp(TestInfo info) {
        db = postgres.database();
        schema = OutboxSchema.builder().schema(db.schema())
                .outboxTable("ops_" + Math.abs(info.getTestMethod().orElseThrow().getName().hashCode())).shards(8)
                .build();
        schema.migrate(db.dataSource());
        table = schema.qualifiedOutboxTable();
        transport = new InMemoryTransport();
        admin = OutboxAdmin.create(db.dataSource(), schema);
        threads = Executors.newCachedThreadPool();
    }

    private long pending() {
        return OutboxStatus.pendingCount(db.dataSource(), schema);
    }

    @AfterEach
    void tearDown() {
        threads.shutdownNow();
        relays.forEach(PollingRelay::close);
    }

    private PollingRelay start(FailurePolicy policy) {
        PollingRelay r = PollingRelay.builder().dataSource(db.dataSource()).schema(schema).transport(transport)
                .lanes(2).batchSize(100).pollInterval(Duration.ofMillis(50)).failurePolicy(policy)
                .retry(RetryPolicy.defaults().withMaxAttempts(2).withBackoff(Duration.ofMillis(20),
                        Duration.ofMillis(50)))
                .build();
        relays.add(r);
        r.start();
        return r;
    }

    private static OutboxMessage event(String key, String type) {
        return OutboxMessage.builder().topic("orders").key(key).aggregate("Order", key).eventType(type)
                .jsonPayload("{\"type\":\"" + type + "\"}").build();
    }

    private List<UUID> write(Outbox outbox, OutboxMessage... messages) throws Exception {
        try (Connection c = db.connect()) {
            c.setClientInfo("ApplicationName", WRITER_APP);
            c.setAutoCommit(false);
            List<UUID> ids = outbox.publish(c, messages);
            c.commit();
            return ids;
        }
    }

    /** Writers committing one event per transaction until stopped; the ids they committed go to {@code ledger}. */
    private Future<?> writers(Outbox outbox, int count, AtomicBoolean stop, ConcurrentLinkedQueue<UUID> ledger) {
        List<Future<?>> all = new ArrayList<>();
        for (int w = 0; w < count; w++) {
            int writer = w;
            all.add(threads.submit(() -> {
                long n = 0;
                while (!stop.get()) {
                    ledger.addAll(write(outbox, event("w" + writer + "-" + (n++ % 20), "Live")));
                }
                return null;
            }));
        }
        return threads.submit(() -> {
            for (Future<?> f : all) {
                f.get();
            }
            return null;
        });
    }

    private long deliveries(UUID eventId) {
        return transport.delivered().stream().filter(r -> r.eventId().equals(eventId)).count();
    }

    private String column(UUID eventId, String column) throws Exception {
        try (Connection c = db.connect(); PreparedStatement ps = c.prepareStatement("SELECT " + column
                + "::text FROM " + table + " WHERE event_id = ?")) {
            ps.setObject(1, eventId);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() ? rs.getString(1) : "<gone>";
            }
        }
    }

    @Test
    void a_requeued_dead_event_is_delivered_once_while_writers_and_the_relay_run() throws Exception {
        PollingRelay relay = start(FailurePolicy.DEAD_LETTER_AND_CONTINUE);
        Outbox outbox = Outbox.builder().schema(schema).afterPublish(relay::nudge).build();
        InMemoryTransport.Rule poisonFails = transport.failWhen(r -> r.eventType().equals("Poison"),
                SendResult.Kind.PERMANENT);
        List<UUID> poison = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            poison.addAll(write(outbox, event("p" + i, "Poison")));
        }
        transport.failWhen(r -> r.eventType().equals("Bad"), SendResult.Kind.PERMANENT);
        UUID bad = write(outbox, event("b", "Bad")).get(0);
        await().atMost(WAIT).until(() -> admin.list(EventFilter.dead(), 0, 100).size() == 6);
        assertThat(poison).allSatisfy(id -> assertThat(deliveries(id)).isZero());

        AtomicBoolean stop = new AtomicBoolean();
        ConcurrentLinkedQueue<UUID> ledger = new ConcurrentLinkedQueue<>();
        Future<?> writing = writers(outbox, 2, stop, ledger);
        await().atMost(WAIT).until(() -> ledger.size() > 50);
        poisonFails.remove();
        assertThat(admin.requeue(poison.get(0), "alice")).isTrue();
        assertThat(admin.requeue(EventFilter.dead().eventType("Poison"), "bob")).isEqualTo(4);
        for (UUID id : poison) {
            transport.awaitDelivered(id, WAIT);
        }
        stop.set(true);
        writing.get();
        UUID sentinel = write(outbox, event("s", "Sentinel")).get(0);
        transport.awaitDelivered(sentinel, WAIT);
        await().atMost(WAIT).until(() -> pending() == 0);

        assertThat(poison).allSatisfy(id -> assertThat(deliveries(id)).isEqualTo(1));
        assertThat(column(poison.get(0), "operator_name")).isEqualTo("alice");
        assertThat(column(poison.get(1), "operator_name")).isEqualTo("bob");
        assertThat(column(poison.get(1), "state")).isEqualTo("PUBLISHED");
        assertThat(column(poison.get(1), "operator_action")).isEqualTo("REQUEUED");
        // the non-matching dead event stayed dead and unsent
        assertThat(column(bad, "state")).isEqualTo("DEAD");
        assertThat(deliveries(bad)).isZero();
        assertThat(ledger).allSatisfy(id -> assertThat(deliveries(id)).isEqualTo(1));
    }

    @Test
    void a_discarded_parked_event_is_never_delivered_and_its_key_moves_on() throws Exception {
        PollingRelay relay = start(FailurePolicy.PARK_KEY);
        Outbox outbox = Outbox.builder().schema(schema).afterPublish(relay::nudge).build();
        InMemoryTransport.Rule poisonFails = transport.failWhen(r -> r.eventType().equals("Poison"),
                SendResult.Kind.PERMANENT);
        List<UUID> ids = write(outbox, event("k1", "E1"), event("k1", "Poison"), event("k1", "E3"));
        await().atMost(WAIT).until(() -> admin.list(EventFilter.parked(), 0, 10).size() == 1);
        assertThat(pending()).isEqualTo(1);
        // from now on the poison would go through if anything sent it
        poisonFails.remove();
        assertThat(admin.discard(ids.get(1), "carol")).isTrue();
        transport.awaitDelivered(ids.get(2), WAIT);
        UUID sentinel = write(outbox, event("k1", "E4")).get(0);
        transport.awaitDelivered(sentinel, WAIT);
        await().atMost(WAIT).until(() -> pending() == 0);

        assertThat(deliveries(ids.get(1))).isZero();
        DeliveredEvents.of(transport.delivered()).assertNoDuplicates().assertKeyOrder("k1", "E1", "E3", "E4");
        assertThat(column(ids.get(1), "state")).isEqualTo("DISCARDED");
        assertThat(column(ids.get(1), "operator_name")).isEqualTo("carol");
        assertThat(admin.list(EventFilter.parked(), 0, 10)).isEmpty();
        assertThat(admin.requeue(EventFilter.dead(), "carol")).isZero();
        assertThat(admin.requeue(ids.get(1), "carol")).as("discarded is final").isFalse();
    }

    @Test
    void retention_deletes_exactly_the_old_published_rows_while_writers_and_the_relay_run_and_blocks_no_writer()
            throws Exception {
        PollingRelay relay = start(FailurePolicy.PARK_KEY);
        Outbox outbox = Outbox.builder().schema(schema).afterPublish(relay::nudge).build();
        // phase 1: published before the cutoff
        for (int i = 0; i < 40; i++) {
            List<OutboxMessage> batch = new ArrayList<>();
            for (int j = 0; j < 50; j++) {
                batch.add(event("old-" + (j % 25), "Old"));
            }
            write(outbox, batch.toArray(new OutboxMessage[0]));
        }
        await().atMost(WAIT).until(() -> pending() == 0);
        // old rows in the other states (their keys are of their own, so the relay leaves them alone)
        db.execute("INSERT INTO " + table + " (topic, partition_key, aggregate_type, aggregate_id, event_type, state,"
                + " created_at, published_at) SELECT 'orders', 'x-' || g, 'Order', g::text, 'E',"
                + " (ARRAY['PARKED', 'DEAD', 'DISCARDED'])[g % 3 + 1], now() - interval '2 days',"
                + " now() - interval '1 day' FROM generate_series(1, 30) g");
        Instant cutoff;
        try (Connection c = db.connect(); ResultSet rs = c.createStatement().executeQuery("SELECT now()")) {
            rs.next();
            cutoff = rs.getTimestamp(1).toInstant();
        }
        Set<UUID> expectedGone = new HashSet<>();
        try (Connection c = db.connect(); PreparedStatement ps = c.prepareStatement("SELECT event_id FROM " + table
                + " WHERE state = 'PUBLISHED' AND published_at < ?")) {
            ps.setTimestamp(1, Timestamp.from(cutoff));
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    expectedGone.add((UUID) rs.getObject(1));
                }
            }
        }
        assertThat(expectedGone).hasSize(2_000);
        long otherStates = db.queryLong("SELECT count(*) FROM " + table + " WHERE state <> 'PUBLISHED'");

        // phase 2: writers and the relay run while the retention deletes; a sampler watches the locks
        AtomicBoolean stop = new AtomicBoolean();
        ConcurrentLinkedQueue<UUID> ledger = new ConcurrentLinkedQueue<>();
        Future<?> writing = writers(outbox, 3, stop, ledger);
        await().atMost(WAIT).until(() -> ledger.size() > 100);
        AtomicBoolean sampling = new AtomicBoolean(true);
        AtomicLong samples = new AtomicLong();
        AtomicLong writersBlockedByRetention = new AtomicLong();
        AtomicLong strongLocksOfRetention = new AtomicLong();
        Future<?> sampler = threads.submit(() -> {
            try (Connection c = db.connect(); PreparedStatement blocked = c.prepareStatement(
                    "SELECT count(*) FROM pg_stat_activity w WHERE w.application_name = ? AND EXISTS (SELECT 1"
                            + " FROM unnest(pg_blocking_pids(w.pid)) b JOIN pg_stat_activity r ON r.pid = b"
                            + " WHERE r.application_name = 'txoutbox-retention')");
                    PreparedStatement strong = c.prepareStatement("SELECT count(*) FROM pg_locks l"
                            + " JOIN pg_stat_activity r ON r.pid = l.pid WHERE r.application_name ="
                            + " 'txoutbox-retention' AND l.locktype = 'relation' AND l.relation = ?::regclass"
                            // ShareUpdateExclusiveLock: brin_summarize_new_values at the start of a run; it
                            // conflicts with vacuum and index builds, never with INSERT, UPDATE or DELETE
                            + " AND l.mode NOT IN ('AccessShareLock', 'RowExclusiveLock', 'ShareUpdateExclusiveLock')")) {
                blocked.setString(1, WRITER_APP);
                strong.setString(1, table);
                while (sampling.get()) {
                    try (ResultSet rs = blocked.executeQuery()) {
                        rs.next();
                        writersBlockedByRetention.addAndGet(rs.getLong(1));
                    }
                    try (ResultSet rs = strong.executeQuery()) {
                        rs.next();
                        strongLocksOfRetention.addAndGet(rs.getLong(1));
                    }
                    samples.incrementAndGet();
                }
            }
            return null;
        });
        await().atMost(WAIT).until(() -> samples.get() > 0); // the sampler is up before the retention starts
        // a pause between the 20 batches makes the run last long enough (≥ 0.4 s) to be sampled many times
        OutboxRetention retention = OutboxRetention.builder().dataSource(db.dataSource()).schema(schema)
                .batchSize(100).pauseBetweenBatches(Duration.ofMillis(20)).build();
        long samplesBefore = samples.get();
        OutboxRetention.Result result = retention.deleteOlderThan(cutoff);
        long samplesDuring = samples.get() - samplesBefore;
        sampling.set(false);
        sampler.get();
        stop.set(true);
        writing.get();
        await().atMost(WAIT).until(() -> pending() == 0);

        assertThat(result.deleted()).isEqualTo(2_000);
        assertThat(result.largestBatch()).isLessThanOrEqualTo(100);
        assertThat(result.batches()).isGreaterThanOrEqualTo(20);
        assertThat(samplesDuring).as("the sampler watched the retention").isPositive();
        assertThat(writersBlockedByRetention.get()).isZero();
        assertThat(strongLocksOfRetention.get()).isZero();
        Set<UUID> present = new HashSet<>();
        try (Connection c = db.connect(); ResultSet rs = c.createStatement()
                .executeQuery("SELECT event_id FROM " + table)) {
            while (rs.next()) {
                present.add((UUID) rs.getObject(1));
            }
        }
        assertThat(present).doesNotContainAnyElementsOf(expectedGone);
        assertThat(present).containsAll(ledger);
        assertThat(db.queryLong("SELECT count(*) FROM " + table + " WHERE state <> 'PUBLISHED'"))
                .isEqualTo(otherStates);
        assertThat(ledger).allSatisfy(id -> assertThat(deliveries(id)).isGreaterThanOrEqualTo(1));
        assertThat(transport.delivered()).extracting(OutboxRecord::eventId).containsAll(expectedGone);
    }
}
