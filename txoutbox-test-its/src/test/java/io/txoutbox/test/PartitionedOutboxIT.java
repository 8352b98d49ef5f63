package io.txoutbox.test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.txoutbox.EventFilter;
import io.txoutbox.FailedEvent;
import io.txoutbox.FailurePolicy;
import io.txoutbox.InvalidMessageException;
import io.txoutbox.Outbox;
import io.txoutbox.OutboxAdmin;
import io.txoutbox.OutboxException;
import io.txoutbox.OutboxMessage;
import io.txoutbox.OutboxPartitioning;
import io.txoutbox.OutboxRetention;
import io.txoutbox.OutboxSchema;
import io.txoutbox.OutboxStatus;
import io.txoutbox.PollingRelay;
import io.txoutbox.RetryPolicy;
import io.txoutbox.internal.progress.ProgressModels;
import io.txoutbox.spi.OutboxRecord;
import io.txoutbox.spi.SendResult;
import io.txoutbox.testing.postgres.PostgresExtension;
import io.txoutbox.testing.postgres.TestDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ThreadLocalRandom;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The time-partitioned outbox against a real PostgreSQL: twenty simulated days (the retention's clock is injected, event
 * ids carry the simulated time), conversion of an existing table, and the default partition as the safety net.
 */
@Tag("pg-version")
@Tag("pg-edge-majors")
class PartitionedOutboxIT {

    @RegisterExtension
    static final PostgresExtension postgres = new PostgresExtension();

    private static final Duration WAIT = Duration.ofSeconds(30);
    private static final int KEEP_DAYS = 7;
    private static final int AHEAD = 3;
    /** Simulated days: enough for the stuck key (day 2 to 12) and the poison's move (day 11), and for 13 drops. */
    private static final int DAYS = 20;

    private TestDatabase db;
    private String table;
    private InMemoryTransport transport;
    private final List<AutoCloseable> closing = new ArrayList<>();

    @BeforeEach
    void setUp(TestInfo info) {
        db = postgres.database();
        table = "pt_" + Math.abs(info.getTestMethod().orElseThrow().getName().hashCode());
        transport = new InMemoryTransport();
    }

    @AfterEach
    void tearDown() throws Exception {
        for (AutoCloseable c : closing) {
            c.close();
        }
    }

    /** The scenario's table; a subclass may set more (its progress model). */
    protected OutboxSchema.Builder schema() {
        return OutboxSchema.builder().schema(db.schema()).outboxTable(table).shards(8);
    }

    /**
     * Waits until the relay has recorded the delivered events {@code ids} as published, as the table's progress model
     * reads them: the row-state relay's mark follows the transport's acknowledgement at once.
     */
    protected void awaitRecorded(OutboxSchema s, Collection<UUID> ids) {
    }

    protected final TestDatabase db() {
        return db;
    }

    private OutboxSchema partitioned() {
        return schema().partitioned(OutboxPartitioning.daily().ahead(AHEAD)).build();
    }

    private PollingRelay startRelay(OutboxSchema s, FailurePolicy policy) {
        PollingRelay relay = PollingRelay.builder().dataSource(db.dataSource()).schema(s).transport(transport)
                .lanes(2).batchSize(100).pollInterval(Duration.ofMillis(50)).failurePolicy(policy)
                .retry(RetryPolicy.defaults().withMaxAttempts(10_000)
                        .withBackoff(Duration.ofMillis(20), Duration.ofMillis(100)))
                .build();
        closing.add(0, relay);
        return relay.start();
    }

    /** A UUIDv7 of the given time, made here so the JVM's own id generator never sees simulated times. */
    private static UUID v7(Instant t) {
        ThreadLocalRandom r = ThreadLocalRandom.current();
        long msb = (t.toEpochMilli() << 16) | 0x7000L | r.nextInt(1 << 12);
        long lsb = (r.nextLong() & 0x3FFF_FFFF_FFFF_FFFFL) | 0x8000_0000_0000_0000L;
        return new UUID(msb, lsb);
    }

    private static OutboxMessage event(String key, UUID eventId) {
        return OutboxMessage.builder().eventId(eventId).topic("orders").aggregate("Order", key).eventType("E")
                .jsonPayload("{}").build();
    }

    private void write(Outbox outbox, OutboxMessage m) throws SQLException {
        try (Connection c = db.connect()) {
            write(c, outbox, m);
        }
    }

    /**
     * One event in its own transaction on {@code c}: a scenario's own rows, written one commit each over one connection
     * (a new connection per row, and per partition look-up, made most of the simulated month's time).
     */
    private static void write(Connection c, Outbox outbox, OutboxMessage m) throws SQLException {
        c.setAutoCommit(false);
        outbox.publish(c, m);
        c.commit();
    }

    private Set<String> partitions(OutboxSchema s) {
        Set<String> names = new HashSet<>();
        try (Connection c = db.connect(); Statement st = c.createStatement();
                ResultSet rs = st.executeQuery("SELECT p.relname FROM pg_inherits i JOIN pg_class p ON p.oid ="
                        + " i.inhrelid WHERE i.inhparent = '" + s.qualifiedOutboxTable() + "'::regclass")) {
            while (rs.next()) {
                names.add(rs.getString(1));
            }
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
        return names;
    }

    private String partitionOf(OutboxSchema s, UUID eventId) {
        return partitionsOf(s, List.of(eventId)).get(eventId);
    }

    /** The partition each event's row is in (no entry: no row), read over one connection. */
    private Map<UUID, String> partitionsOf(OutboxSchema s, List<UUID> eventIds) {
        Map<UUID, String> out = new LinkedHashMap<>();
        try (Connection c = db.connect();
                PreparedStatement ps = c.prepareStatement("SELECT tableoid::regclass::text FROM "
                        + s.qualifiedOutboxTable() + " WHERE event_id = ?")) {
            for (UUID eventId : eventIds) {
                ps.setObject(1, eventId);
                try (ResultSet rs = ps.executeQuery()) {
                    if (rs.next()) {
                        out.put(eventId, rs.getString(1).replaceFirst("^.*\\.", "").replace("\"", ""));
                    }
                }
            }
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
        return out;
    }

    private String day(Instant start) {
        return table + "_p" + start.atZone(ZoneOffset.UTC).toLocalDate().toString().replace("-", "");
    }

    @Test
    void a_simulated_month_creates_partitions_ahead_drops_them_on_time_and_the_relay_delivers_across_boundaries()
            throws Exception {
        OutboxSchema s = partitioned();
        s.migrate(db.dataSource());
        // the conversion puts everything before the first period starting at least an hour from now in _legacy
        Instant first = OutboxPartitioning.Period.DAY.next(OutboxPartitioning.Period.DAY.startOf(
                Instant.now().plus(Duration.ofHours(1))));
        assertThat(partitions(s)).contains(table + "_legacy", table + "_default");

        SimulatedClock clock = new SimulatedClock(first);
        OutboxRetention retention = OutboxRetention.builder().dataSource(db.dataSource()).schema(s)
                .retention(Duration.ofDays(KEEP_DAYS)).clock(clock).pauseBetweenBatches(Duration.ZERO).build();
        closing.add(retention);
        startRelay(s, FailurePolicy.DEAD_LETTER_AND_CONTINUE);
        Outbox outbox = Outbox.builder().schema(s).build();
        OutboxAdmin admin = OutboxAdmin.create(db.dataSource(), s);

        Map<String, List<UUID>> written = new LinkedHashMap<>();
        // day 2: a key the transport refuses until day 12 keeps the day's partition past its expiry
        InMemoryTransport.Rule stuck = transport.failWhen(r -> "stuck".equals(r.key()), SendResult.Kind.RETRIABLE);
        // day 3: a poison event, dead-lettered; its partition's drop must move it, not lose it
        InMemoryTransport.Rule poisonRule =
                transport.failWhen(r -> "poison".equals(r.key()), SendResult.Kind.PERMANENT);
        UUID poison = null;
        long dropped = 0;
        // meanwhile two writers commit events of the simulated day without pause: partitions are attached and
        // detached under their feet, and not one write may fail
        Writers writers = new Writers(Outbox.builder().schema(s).build(), 2, clock);
        closing.add(0, writers);

        for (int d = 0; d < DAYS; d++) {
            Instant dayStart = first.plus(d, ChronoUnit.DAYS);
            clock.set(dayStart.plus(Duration.ofHours(12)));
            // the writers' events of the days that expire now are published (the relay keeps up; a partition with
            // pending rows would rightly be kept, which is tested with the stuck key)
            Instant cutoff = clock.instant().minus(Duration.ofDays(KEEP_DAYS));
            List<UUID> due = writers.writtenBefore(cutoff);
            await().atMost(WAIT).until(() -> transport.delivered().stream().map(OutboxRecord::eventId)
                    .collect(Collectors.toSet()).containsAll(due));
            awaitRecorded(s, due);
            if (d == 12) {
                stuck.remove();
                List<UUID> stuckIds = written.get("stuck");
                transport.awaitDelivered(r -> stuckIds.contains(r.eventId()), stuckIds.size(), WAIT);
                awaitRecorded(s, stuckIds);
            }
            OutboxRetention.Result run = retention.runOnce();
            OutboxRetention.Partitions p = run.partitions();
            assertThat(p).as("day %d", d).isNotNull();
            dropped += p.dropped().size();

            Set<String> expected = new HashSet<>();
            expected.add(table + "_default");
            if (d < KEEP_DAYS) {
                expected.add(table + "_legacy");
            }
            for (int k = Math.max(0, d - KEEP_DAYS); k <= d + AHEAD; k++) {
                expected.add(day(first.plus(k, ChronoUnit.DAYS)));
            }
            String day2 = day(first.plus(2, ChronoUnit.DAYS));
            if (d >= 10 && d < 12) {
                expected.add(day2);
                assertThat(p.kept()).as("day %d", d).anyMatch(line -> line.startsWith(day2 + " kept: ")
                        && line.contains("PENDING"));
            }
            assertThat(partitions(s)).as("partitions on day %d", d).isEqualTo(expected);
            if (d == 12) {
                assertThat(p.dropped()).contains(day2);
            }
            if (d == 11) {
                // day 3 expired: its dead row moved to the default partition with its id, still listed and requeueable
                assertThat(p.dropped()).contains(day(first.plus(3, ChronoUnit.DAYS)));
                assertThat(p.rowsMoved()).isEqualTo(1);
                assertThat(partitionOf(s, poison)).isEqualTo(table + "_default");
                assertThat(admin.list(EventFilter.dead(), 0, 10))
                        .extracting(FailedEvent::eventId).containsExactly(poison);
                poisonRule.remove();
                assertThat(admin.requeue(poison, "test")).isTrue();
                transport.awaitDelivered(poison, WAIT);
            }

            // the day's writes, at both edges of its partition and in between: each lands in the day's partition
            List<UUID> today = new ArrayList<>();
            Instant[] instants = {dayStart, dayStart.plusMillis(1), dayStart.plus(Duration.ofHours(12)),
                    dayStart.plus(1, ChronoUnit.DAYS).minusMillis(1)};
            try (Connection c = db.connect()) {
                for (Instant at : instants) {
                    for (int k = 0; k < 5; k++) {
                        UUID id = v7(at);
                        write(c, outbox, event("k" + k, id));
                        written.computeIfAbsent("k" + k, x -> new ArrayList<>()).add(id);
                        today.add(id);
                    }
                }
                if (d == 2) {
                    for (int i = 0; i < 3; i++) {
                        UUID id = v7(dayStart.plus(Duration.ofHours(1 + i)));
                        write(c, outbox, event("stuck", id));
                        written.computeIfAbsent("stuck", x -> new ArrayList<>()).add(id);
                    }
                }
            }
            if (d == 3) {
                poison = v7(dayStart.plus(Duration.ofHours(2)));
                write(outbox, event("poison", poison));
                await().atMost(WAIT).until(() -> admin.list(EventFilter.dead(), 0, 10).size() == 1);
            }
            Map<UUID, String> todays = partitionsOf(s, today);
            for (UUID id : today) {
                assertThat(todays.get(id)).as("event at %s", UuidTime.of(id)).isEqualTo(day(dayStart));
            }
            transport.awaitDelivered(r -> today.contains(r.eventId()), today.size(), WAIT);
        }

        writers.close();
        assertThat(writers.errors).as("writer errors").isEmpty();
        assertThat(writers.ids).hasSizeGreaterThan(100);
        transport.awaitDelivered(r -> r.key() != null && r.key().startsWith("live-"), writers.ids.size(), WAIT);

        // DAYS days, 7 kept: the legacy partition and DAYS - 8 days dropped, every write delivered once and in key order
        assertThat(dropped).isEqualTo(DAYS - KEEP_DAYS);
        Map<String, List<UUID>> delivered = transport.delivered().stream()
                .filter(r -> written.containsKey(r.key()))
                .collect(Collectors.groupingBy(OutboxRecord::key, LinkedHashMap::new,
                        Collectors.mapping(OutboxRecord::eventId, Collectors.toList())));
        assertThat(delivered).isEqualTo(written);
        DeliveredEvents.of(transport.delivered()).assertNoDuplicates();
        awaitRecorded(s, transport.delivered().stream().map(OutboxRecord::eventId).toList());
        assertThat(db.queryLong("SELECT count(*) FROM " + s.qualifiedOutboxTable() + " o WHERE "
                + ProgressModels.of(s).pending("o"))).as("pending, as the table's progress model reads it").isZero();
    }

    @Test
    void converting_a_table_with_rows_keeps_ids_grants_and_pending_events_and_the_relay_goes_on() throws Exception {
        OutboxSchema plain = schema().build();
        plain.migrate(db.dataSource());
        String role = "w_" + table;
        String owner = "o_" + table;
        db.execute("DROP ROLE IF EXISTS " + role, "CREATE ROLE " + role, "DROP ROLE IF EXISTS " + owner,
                "CREATE ROLE " + owner, "GRANT ALL ON SCHEMA " + db.schema() + " TO " + owner,
                "ALTER TABLE " + plain.qualifiedOutboxTable() + " OWNER TO " + owner,
                "GRANT INSERT ON " + plain.qualifiedOutboxTable() + " TO " + role,
                "GRANT SELECT ON SEQUENCE " + db.schema() + "." + table + "_id_seq TO " + role);
        Outbox plainOutbox = Outbox.builder().schema(plain).build();
        Map<String, List<UUID>> pendingByKey = new LinkedHashMap<>();
        List<UUID> before = new ArrayList<>();
        try (Connection c = db.connect()) {
            for (int i = 0; i < 300; i++) {
                UUID id = v7(Instant.now());
                write(c, plainOutbox, event("k" + (i % 7), id));
                before.add(id);
                if (i >= 100) {
                    pendingByKey.computeIfAbsent("k" + (i % 7), x -> new ArrayList<>()).add(id);
                }
            }
        }
        // a third published before the conversion, the rest still pending
        db.execute("UPDATE " + plain.qualifiedOutboxTable() + " SET state = 'PUBLISHED', published_at = now()"
                + " WHERE id <= 100");
        long maxId = db.queryLong("SELECT max(id) FROM " + plain.qualifiedOutboxTable());
        long rows = db.queryLong("SELECT count(*) FROM " + plain.qualifiedOutboxTable());

        OutboxSchema s = partitioned();
        s.migrate(db.dataSource());
        s.migrate(db.dataSource()); // a second migrate converts nothing more

        assertThat(db.queryLong("SELECT count(*) FROM pg_class WHERE oid = '" + s.qualifiedOutboxTable()
                + "'::regclass AND relkind = 'p'")).isOne();
        assertThat(db.queryLong("SELECT count(*) FROM " + s.qualifiedOutboxTable())).isEqualTo(rows);
        assertThat(db.queryLong("SELECT max(id) FROM " + s.qualifiedOutboxTable())).isEqualTo(maxId);
        assertThat(partitionOf(s, before.get(0))).isEqualTo(table + "_legacy");
        assertThat(db.queryLong("SELECT count(*) FROM pg_constraint WHERE conname = '" + table + "_legacy_bound'"))
                .isZero();
        assertThat(db.queryLong("SELECT has_table_privilege('" + role + "', '" + s.qualifiedOutboxTable()
                + "', 'INSERT')::int")).isOne();
        assertThat(db.queryLong("SELECT has_sequence_privilege('" + role + "', pg_get_serial_sequence('"
                + s.qualifiedOutboxTable() + "', 'id'), 'SELECT')::int")).isOne();
        assertThat(db.queryLong("SELECT (pg_get_userbyid(relowner) = '" + owner + "')::int FROM pg_class WHERE oid = '"
                + s.qualifiedOutboxTable() + "'::regclass")).isOne();
        // the plain table's indexes serve its partition (attached, not rebuilt); the parent has the same ones:
        // pkey, pending, waiting, id (BRIN), failed (V3), backoff (V9), held (V11)
        assertThat(db.queryLong("SELECT count(*) FROM pg_index WHERE indrelid = '" + s.qualifiedOutboxTable()
                + "'::regclass")).isEqualTo(db.queryLong("SELECT count(*) FROM pg_index WHERE indrelid = '"
                        + db.schema() + "." + table + "_legacy'::regclass")).isEqualTo(7);

        // the relay delivers the 200 pending events and new ones, in key order; new ids continue the sequence
        startRelay(s, FailurePolicy.PARK_KEY);
        Outbox outbox = Outbox.builder().schema(s).build();
        List<UUID> after = new ArrayList<>();
        try (Connection c = db.connect()) {
            for (int i = 0; i < 70; i++) {
                UUID id = v7(Instant.now());
                write(c, outbox, event("k" + (i % 7), id));
                after.add(id);
                pendingByKey.get("k" + (i % 7)).add(id);
            }
        }
        assertThat(db.queryLong("SELECT id FROM " + s.qualifiedOutboxTable() + " WHERE event_id = '"
                + after.get(0) + "'")).isEqualTo(maxId + 1);
        transport.awaitDelivered(r -> true, 270, WAIT);
        Map<String, List<UUID>> delivered = transport.delivered().stream()
                .collect(Collectors.groupingBy(OutboxRecord::key, LinkedHashMap::new,
                        Collectors.mapping(OutboxRecord::eventId, Collectors.toList())));
        assertThat(delivered).isEqualTo(pendingByKey);
    }

    @Test
    void a_table_with_ids_that_are_not_uuidv7_is_refused_with_the_fix_and_left_unchanged() throws Exception {
        OutboxSchema plain = schema().build();
        plain.migrate(db.dataSource());
        Outbox plainOutbox = Outbox.builder().schema(plain).build();
        write(plainOutbox, event("k", UUID.fromString("f0000000-0000-4000-8000-000000000000")));

        assertThatThrownBy(() -> partitioned().migrate(db.dataSource()))
                .isInstanceOf(OutboxException.class)
                .hasMessageContaining("1 rows have event ids at or after")
                .hasMessageContaining("UUIDv7")
                .hasMessageContaining("keep the plain table");
        assertThat(db.queryLong("SELECT count(*) FROM pg_class WHERE oid = '" + plain.qualifiedOutboxTable()
                + "'::regclass AND relkind = 'r'")).isOne();
        assertThat(db.queryLong("SELECT count(*) FROM pg_constraint WHERE conname = '" + table + "_legacy_bound'"))
                .isZero();
        write(plainOutbox, event("k", UUID.randomUUID()));
        assertThat(db.queryLong("SELECT count(*) FROM " + plain.qualifiedOutboxTable())).isEqualTo(2);
    }

    @Test
    void a_write_outside_every_period_lands_in_the_default_partition_and_a_non_v7_id_is_refused() throws Exception {
        OutboxSchema s = partitioned();
        s.migrate(db.dataSource());
        Outbox outbox = Outbox.builder().schema(s).build();
        UUID farAhead = v7(Instant.now().plus(Duration.ofDays(400)));
        write(outbox, event("k", farAhead));
        assertThat(partitionOf(s, farAhead)).isEqualTo(table + "_default");
        // retention reports the row in the default partition; creating partitions around it still works
        OutboxRetention.Result r = OutboxRetention.builder().dataSource(db.dataSource()).schema(s)
                .retention(Duration.ofDays(KEEP_DAYS)).build().runOnce();
        assertThat(r.partitions().defaultPartitionRows()).isEqualTo(1);
        // the status shows the partitions in order: _legacy (everything before the first period), the periods, and
        // the default one last with its row
        OutboxStatus status = OutboxStatus.snapshot(db.dataSource(), s);
        Instant first = OutboxPartitioning.Period.DAY.next(OutboxPartitioning.Period.DAY.startOf(
                Instant.now().plus(Duration.ofHours(1))));
        assertThat(status.partitions().get(0)).isEqualTo(
                new OutboxStatus.PartitionStatus(table + "_legacy", null, first, 0, false));
        assertThat(status.partitions().get(1)).extracting(OutboxStatus.PartitionStatus::name,
                OutboxStatus.PartitionStatus::from, OutboxStatus.PartitionStatus::to)
                .containsExactly(day(first), first, first.plus(Duration.ofDays(1)));
        assertThat(status.partitions()).last().isEqualTo(
                new OutboxStatus.PartitionStatus(table + "_default", null, null, 1, true));
        assertThat(status.toText()).contains("default partition: 1 row\n")
                .contains("partitions: " + (status.partitions().size() - 1) + ", " + table + "_legacy … ");
        // the period of that row cannot get a partition while the row sits in the default partition: reported
        OutboxRetention.Result later = OutboxRetention.builder().dataSource(db.dataSource()).schema(s)
                .retention(Duration.ofDays(KEEP_DAYS))
                .clock(Clock.fixed(Instant.now().plus(Duration.ofDays(400)), ZoneId.of("UTC"))).build().runOnce();
        assertThat(later.partitions().kept()).anyMatch(line -> line.contains("default partition holds rows"));
        assertThat(partitionOf(s, farAhead)).isEqualTo(table + "_default");

        try (Connection c = db.connect()) {
            c.setAutoCommit(false);
            UUID v4 = UUID.randomUUID();
            assertThatThrownBy(() -> outbox.publish(c, event("k", v4)))
                    .isInstanceOf(InvalidMessageException.class)
                    .hasMessageContaining("version 4")
                    .hasMessageContaining("leave eventId unset");
            // the caller's transaction is still usable
            outbox.publish(c, event("k", v7(Instant.now())));
            c.commit();
        }
        assertThat(db.queryLong("SELECT count(*) FROM " + s.qualifiedOutboxTable())).isEqualTo(2);
    }

    @Test
    void a_plain_configuration_on_a_partitioned_table_is_refused_by_retention_with_the_fix() {
        OutboxSchema s = partitioned();
        s.migrate(db.dataSource());
        OutboxSchema plain = schema().build();
        assertThatThrownBy(() -> OutboxRetention.builder().dataSource(db.dataSource()).schema(plain).build()
                .runOnce()).isInstanceOf(OutboxException.class).hasMessageContaining(".partitioned(");
    }

    /** Threads that write one event (of the clock's time) per transaction until closed, recording any failure. */
    private final class Writers implements AutoCloseable {
        final java.util.Queue<Map.Entry<Instant, UUID>> ids = new java.util.concurrent.ConcurrentLinkedQueue<>();
        final List<Throwable> errors = java.util.Collections.synchronizedList(new ArrayList<>());
        private volatile boolean stop;
        private final List<Thread> threads = new ArrayList<>();

        Writers(Outbox outbox, int n, Clock clock) {
            for (int i = 0; i < n; i++) {
                String key = "live-" + i;
                Thread t = new Thread(() -> {
                    while (!stop) {
                        Instant at = clock.instant();
                        UUID id = v7(at);
                        try {
                            write(outbox, OutboxMessage.builder().eventId(id).topic("live").aggregate("Order", key)
                                    .eventType("E").jsonPayload("{}").build());
                            ids.add(Map.entry(at, id));
                        } catch (Throwable e) {
                            errors.add(e);
                            return;
                        }
                    }
                }, "writer-" + i);
                threads.add(t);
                t.start();
            }
        }

        List<UUID> writtenBefore(Instant t) {
            return ids.stream().filter(e -> e.getKey().isBefore(t)).map(Map.Entry::getValue).toList();
        }

        @Override
        public void close() throws InterruptedException {
            stop = true;
            for (Thread t : threads) {
                t.join();
            }
        }
    }

    /** The retention's clock, moved by the test. */
    private static final class SimulatedClock extends Clock {
        private volatile Instant now;

        SimulatedClock(Instant now) {
            this.now = now;
        }

        void set(Instant now) {
            this.now = now;
        }

        @Override
        public ZoneId getZone() {
            return ZoneOffset.UTC;
        }

        @Override
        public Clock withZone(ZoneId zone) {
            return this;
        }

        @Override
        public Instant instant() {
            return now;
        }
    }

    private static final class UuidTime {
        static Instant of(UUID id) {
            return Instant.ofEpochMilli(id.getMostSignificantBits() >>> 16);
        }
    }
}
