package io.txoutbox.test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;
import static org.awaitility.Awaitility.await;

import io.txoutbox.Outbox;
import io.txoutbox.OutboxException;
import io.txoutbox.OutboxGrants;
import io.txoutbox.OutboxMessage;
import io.txoutbox.OutboxPartitioning;
import io.txoutbox.OutboxRetention;
import io.txoutbox.OutboxSchema;
import io.txoutbox.PollingRelay;
import io.txoutbox.internal.SchemaMigrator;
import io.txoutbox.internal.TestHooks;
import io.txoutbox.testing.postgres.PostgresExtension;
import io.txoutbox.testing.postgres.TestDatabase;
import io.txoutbox.testing.process.JvmProcess;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Queue;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Converting a plain outbox table into a time-partitioned one while writers go on: a conversion that fails or is
 * killed at any step must leave every INSERT the plain table accepted accepted, also with event ids past the bound
 * of the legacy partition.
 */
@Tag("pg-version")
@Tag("pg-edge-majors")
class PartitionConversionIT {

    @RegisterExtension
    static final PostgresExtension postgres = new PostgresExtension();

    /** The application_name of the converting session, which the test's gate check recognises. */
    static final String CONVERTER = "conversion-under-test";
    static final int GATE_LOCK = 4242;

    private TestDatabase db;
    private String table;

    @BeforeEach
    void setUp(TestInfo info) {
        db = postgres.database();
        table = "pc_" + Math.abs((info.getTestMethod().orElseThrow().getName() + info.getDisplayName()).hashCode());
    }

    private OutboxSchema.Builder schema() {
        return OutboxSchema.builder().schema(db.schema()).outboxTable(table).shards(8);
    }

    static UUID v7(Instant t) {
        ThreadLocalRandom r = ThreadLocalRandom.current();
        long msb = (t.toEpochMilli() << 16) | 0x7000L | r.nextInt(1 << 12);
        long lsb = (r.nextLong() & 0x3FFF_FFFF_FFFF_FFFFL) | 0x8000_0000_0000_0000L;
        return new UUID(msb, lsb);
    }

    static OutboxMessage event(String key, UUID eventId) {
        return OutboxMessage.builder().eventId(eventId).topic("orders").aggregate("Order", key).eventType("E")
                .jsonPayload("{}").build();
    }

    private void write(Outbox outbox, UUID id) throws SQLException {
        try (Connection c = db.connect()) {
            write(c, outbox, id);
        }
    }

    /**
     * One event in its own transaction on {@code c}: the set-up's rows, written one commit each over one connection
     * (a new connection per row cost seconds of each case's set-up).
     */
    private static void write(Connection c, Outbox outbox, UUID id) throws SQLException {
        c.setAutoCommit(false);
        outbox.publish(c, event("k", id));
        c.commit();
    }

    /**
     * Regression: the conversion carried the table's grants over but not its column grants, so a relay role holding
     * exactly {@code OutboxGrants.sql(schema, RELAY, role)} (UPDATE on the state columns only) could no longer start
     * on the converted table.
     */
    @Test
    void a_relay_role_with_column_grants_publishes_after_the_conversion() throws Exception {
        OutboxSchema plain = schema().build();
        plain.migrate(db.dataSource());
        javax.sql.DataSource relayRole = db.loginRole("conv_relay",
                r -> OutboxGrants.sql(plain, OutboxGrants.Component.RELAY, r));
        OutboxSchema partitioned = schema().partitioned(OutboxPartitioning.daily()).build();
        partitioned.migrate(db.dataSource());
        assertThat(db.queryLong("SELECT count(*) FROM pg_partitioned_table WHERE partrelid = '"
                + partitioned.qualifiedOutboxTable() + "'::regclass")).as("converted").isEqualTo(1);
        Outbox outbox = Outbox.builder().schema(partitioned).build();
        UUID id = v7(Instant.now());
        write(outbox, id);
        InMemoryTransport transport = new InMemoryTransport();
        try (PollingRelay relay = PollingRelay.builder().dataSource(relayRole).schema(partitioned)
                .transport(transport).lanes(1).pollInterval(Duration.ofMillis(20)).build().start()) {
            transport.awaitDelivered(r -> r.eventId().equals(id), Duration.ofSeconds(10));
        }
    }

    /**
     * A CHECK constraint of the user's, added NOT VALID (as a constraint validated online would be), whose validation
     * by the converting session waits while the test holds an advisory lock: the conversion can be held at that point
     * without any fault hook in the code under test. Writers' rows pass it at once.
     */
    private void addGateCheck(OutboxSchema s) {
        db.execute("CREATE OR REPLACE FUNCTION " + db.schema() + ".conversion_gate(x bigint) RETURNS boolean"
                + " LANGUAGE plpgsql AS $$ BEGIN IF current_setting('application_name') = '" + CONVERTER + "' THEN"
                + " PERFORM pg_advisory_xact_lock_shared(" + GATE_LOCK + "); END IF; RETURN true; END $$",
                "ALTER TABLE " + s.qualifiedOutboxTable() + " ADD CONSTRAINT " + table + "_gate CHECK ("
                        + db.schema() + ".conversion_gate(id)) NOT VALID");
    }

    private long converterWaitingAtGate() {
        return db.queryLong("SELECT count(*) FROM pg_stat_activity WHERE application_name = '" + CONVERTER
                + "' AND wait_event_type = 'Lock' AND wait_event = 'advisory'");
    }

    @Test
    void a_conversion_that_times_out_behind_a_long_writer_leaves_the_table_unchanged_and_accepts_ids_past_the_bound()
            throws Exception {
        OutboxSchema plain = schema().build();
        plain.migrate(db.dataSource());
        Outbox outbox = Outbox.builder().schema(plain).build();
        List<UUID> written = new ArrayList<>();
        try (Connection c = db.connect()) {
            for (int i = 0; i < 50; i++) {
                UUID id = v7(Instant.now());
                write(c, outbox, id);
                written.add(id);
            }
        }
        addGateCheck(plain);
        OutboxSchema partitioned = schema().partitioned(OutboxPartitioning.daily()).build();

        Throwable failure;
        try (Connection gate = db.connect(); Connection converter = db.connect();
                Connection longWriter = db.connect()) {
            try (Statement st = gate.createStatement()) {
                st.execute("SELECT pg_advisory_lock(" + GATE_LOCK + ")");
            }
            try (Statement st = converter.createStatement()) {
                st.execute("SET application_name = '" + CONVERTER + "'");
            }
            CompletableFuture<Void> conversion = CompletableFuture.runAsync(() -> partitioned.migrate(converter));
            await().atMost(Duration.ofSeconds(30)).until(() -> converterWaitingAtGate() == 1);
            // a writer transaction that stays open through the rest of the conversion
            longWriter.setAutoCommit(false);
            UUID longOne = v7(Instant.now());
            outbox.publish(longWriter, event("long", longOne));
            try (Statement st = gate.createStatement()) {
                st.execute("SELECT pg_advisory_unlock(" + GATE_LOCK + ")");
            }
            failure = catchThrowable(() -> conversion.get(2, TimeUnit.MINUTES));
            longWriter.commit();
            written.add(longOne);
        }
        assertThat(failure).as("the conversion gave up behind the long writer").isNotNull();
        assertThat(failure.getCause()).isInstanceOf(OutboxException.class)
                .hasMessageContaining("the table is unchanged");

        // and every writer's INSERT the plain table accepted is still accepted, also past any bound of the conversion
        for (Duration ahead : List.of(Duration.ofHours(2), Duration.ofDays(2), Duration.ofDays(40))) {
            UUID id = v7(Instant.now().plus(ahead));
            write(outbox, id);
            written.add(id);
        }
        // unchanged: still the plain table, nothing of the conversion left on it
        assertThat(db.queryLong("SELECT count(*) FROM pg_class WHERE oid = '" + plain.qualifiedOutboxTable()
                + "'::regclass AND relkind = 'r'")).isOne();
        assertThat(db.queryLong("SELECT count(*) FROM pg_constraint WHERE conrelid = '" + plain.qualifiedOutboxTable()
                + "'::regclass AND conname LIKE '%legacy%'")).isZero();
        assertThat(db.queryLong("SELECT count(*) FROM " + plain.qualifiedOutboxTable())).isEqualTo(written.size());
    }

    /**
     * Every step once, the entry points in turn (6 runs: each step and each entry point on every version of the
     * build's matrix); every step × every entry point (18 runs) with {@code -Dconversion.all=true}. The build ran all 18
     * on the default PostgreSQL until 2026-12-04 (214 s of a CI run at 25 min, its limit); their figures, 3 runs each
     * on every major, are in RELIABILITY.md.
     */
    static Stream<Arguments> stepsAndEntryPoints() {
        List<Arguments> out = new ArrayList<>();
        List<String> hooks = List.of(TestHooks.CONVERT_BEFORE_SPLIT_COMMIT, TestHooks.CONVERT_AFTER_SPLIT,
                TestHooks.CONVERT_AFTER_VALIDATE, TestHooks.CONVERT_AFTER_MOVE, TestHooks.CONVERT_BEFORE_SWAP_COMMIT,
                TestHooks.CONVERT_AFTER_SWAP);
        List<String> entries = List.of("migrate", "relay start", "retention");
        boolean all = Boolean.getBoolean("conversion.all");
        for (int h = 0; h < hooks.size(); h++) {
            for (int e = 0; e < entries.size(); e++) {
                String hook = hooks.get(h);
                String entry = entries.get(e);
                // -Dconversion.only=<hook>/<entry point> runs one case, e.g. convert-after-split/migrate
                String only = System.getProperty("conversion.only");
                if (only != null ? !only.equals(hook + "/" + entry) : !all && e != h % entries.size()) {
                    continue;
                }
                out.add(Arguments.of(hook, entry));
            }
        }
        return out.stream();
    }

    /**
     * A migrate SIGKILLed at each step of the conversion while two writers commit (one row per
     * transaction, every ~25 ms, each over its own connection held throughout): right after the kill, INSERTs with
     * event ids past the legacy bound succeed; then the next migrate (its clock two days past the bound),
     * relay start or retention run (its clock two days past the bound) leaves a consistent table with every event,
     * ids continuous, the sequence's grant kept.
     */
    @ParameterizedTest(name = "killed at {0}, then {1}")
    @MethodSource("stepsAndEntryPoints")
    void a_conversion_killed_at_any_step_keeps_every_insert_accepted_and_the_next_run_finishes_it(String hook,
            String entry) throws Exception {
        OutboxSchema plain = schema().build();
        plain.migrate(db.dataSource());
        String role = "seq_" + table;
        db.execute("DROP ROLE IF EXISTS " + role, "CREATE ROLE " + role,
                "GRANT SELECT ON SEQUENCE " + db.schema() + "." + table + "_id_seq TO " + role);
        Outbox outbox = Outbox.builder().schema(plain).build();
        Set<UUID> expected = Collections.synchronizedSet(new HashSet<>());
        Set<UUID> published = new HashSet<>();
        try (Connection c = db.connect()) {
            for (int i = 0; i < 200; i++) {
                UUID id = v7(Instant.now());
                write(c, outbox, id);
                expected.add(id);
                if (i < 100) {
                    published.add(id);
                }
            }
        }
        db.execute("UPDATE " + plain.qualifiedOutboxTable() + " SET state = 'PUBLISHED', published_at = now()"
                + " WHERE id <= 100");
        Instant start = Instant.now();
        OutboxPartitioning.Period day = OutboxPartitioning.Period.DAY;
        Instant boundAt = day.next(day.startOf(start.plus(Duration.ofHours(1))));
        OutboxSchema partitioned = schema().partitioned(OutboxPartitioning.daily()).build();

        String stage;
        long duringConversion;
        // a relay publishes throughout (its marks make the rows the conversion moves in batches), and two writers
        InMemoryTransport transport = new InMemoryTransport();
        try (PollingRelay running = PollingRelay.builder().dataSource(db.dataSource()).schema(partitioned)
                .transport(transport).lanes(2).batchSize(100).pollInterval(Duration.ofMillis(20)).build().start();
                Writers writers = new Writers(outbox, 2)) {
            // the writers' published rows: some move in batches, the rest with the pending ones in the swap
            try (JvmProcess converter = JvmProcess.builder(ConversionProcessMain.class).name("converter")
                    .jvmArgs("-Xmx128m").hook(hook, "kill")
                    .args(db.jdbcUrl(), db.server().user(), db.server().password(), db.schema(), table,
                            Long.toString(start.toEpochMilli())).start()) {
                long before = writers.committed.get();
                converter.awaitHook(hook, Duration.ofMinutes(1));
                assertThat(converter.awaitExit(Duration.ofSeconds(30))).as("SIGKILLed").isEqualTo(137);
                duringConversion = writers.committed.get() - before;
            }
            stage = stage(plain);
            // right after the kill, before anything finishes the conversion: ids past the bound are accepted
            for (Duration past : List.of(Duration.ofMillis(1), Duration.ofHours(1), Duration.ofDays(2))) {
                UUID id = v7(boundAt.plus(past));
                write(outbox, id);
                expected.add(id);
            }
            assertThat(writers.errors).as("writers' errors").isEmpty();

            Clock later = Clock.fixed(boundAt.plus(Duration.ofDays(2)), ZoneOffset.UTC);
            switch (entry) {
                case "migrate" -> {
                    try (Connection c = db.connect()) {
                        new SchemaMigrator(partitioned, later).migrate(c);
                    }
                }
                case "relay start" -> {
                    try (PollingRelay relay = PollingRelay.builder().dataSource(db.dataSource()).schema(partitioned)
                            .transport(new InMemoryTransport()).lanes(1).pollInterval(Duration.ofMillis(50))
                            .build()) {
                        relay.start();
                    }
                }
                default -> {
                    try (OutboxRetention retention = OutboxRetention.builder().dataSource(db.dataSource())
                            .schema(partitioned).retention(Duration.ofDays(7)).clock(later).build()) {
                        Throwable t = catchThrowable(retention::runOnce);
                        if (stage.equals("plain")) {
                            assertThat(t).as("nothing to finish: retention asks for migrate")
                                    .hasMessageContaining("run OutboxSchema.migrate");
                        } else {
                            assertThat(t).isNull();
                        }
                    }
                }
            }
            for (int i = 0; i < 3; i++) {
                UUID id = v7(boundAt.plus(Duration.ofDays(5)).plusMillis(i));
                write(outbox, id);
                expected.add(id);
            }
            writers.close();
            assertThat(writers.errors).as("writers' errors").isEmpty();
            expected.addAll(writers.ids);
            // the relay, which worked on through the conversion, delivers every event not published before it
            Set<UUID> toDeliver = new HashSet<>(expected);
            toDeliver.removeAll(published);
            await().atMost(Duration.ofMinutes(1)).until(() -> transport.delivered().stream()
                    .map(r -> r.eventId()).collect(Collectors.toSet()).containsAll(toDeliver));
            assertThat(transport.delivered()).extracting(r -> r.eventId()).doesNotContainAnyElementsOf(published);
        }

        String after = stage(plain);
        boolean convertedBefore = !stage.equals("plain");
        assertThat(after).as("after the kill at %s (%s) and %s", hook, stage, entry)
                .isEqualTo(convertedBefore || entry.equals("migrate") ? "partitioned" : "plain");
        // no piece of the conversion is left over
        assertThat(db.queryLong("SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
                + " WHERE n.nspname = '" + db.schema() + "' AND c.relname = '" + table + "_conversion'")).isZero();
        assertThat(db.queryLong("SELECT count(*) FROM pg_constraint WHERE conname = '" + table + "_legacy_bound'"))
                .isZero();
        if (after.equals("plain")) {
            assertThat(db.queryLong("SELECT count(*) FROM pg_class WHERE relname = '" + table + "_legacy'")).isZero();
        }
        // every event once, ids distinct, and the next id continues the sequence
        List<UUID> ids = new ArrayList<>();
        long maxId = 0;
        Set<Long> rowIds = new HashSet<>();
        try (Connection c = db.connect(); Statement st = c.createStatement();
                ResultSet rs = st.executeQuery("SELECT event_id, id FROM " + plain.qualifiedOutboxTable())) {
            while (rs.next()) {
                ids.add((UUID) rs.getObject(1));
                assertThat(rowIds.add(rs.getLong(2))).as("id %d once", rs.getLong(2)).isTrue();
                maxId = Math.max(maxId, rs.getLong(2));
            }
        }
        assertThat(ids).hasSize(expected.size());
        assertThat(new HashSet<>(ids)).isEqualTo(expected);
        UUID next = v7(Instant.now());
        write(outbox, next);
        assertThat(db.queryLong("SELECT id FROM " + plain.qualifiedOutboxTable() + " WHERE event_id = '" + next
                + "'")).isEqualTo(maxId + 1);
        assertThat(db.queryLong("SELECT has_sequence_privilege('" + role + "', pg_get_serial_sequence('"
                + plain.qualifiedOutboxTable() + "', 'id'), 'SELECT')::int")).isOne();
        System.out.printf("CONVERSION-CRASH hook=%s entry=%s stage-after-kill=%s after=%s rows=%d"
                + " writer-commits-during-conversion=%d failed-inserts=0%n", hook, entry, stage, after, ids.size(),
                duringConversion);
    }

    @Test
    void an_event_id_repeated_while_the_conversion_is_split_does_not_stop_it_and_is_kept_once() throws Exception {
        OutboxSchema plain = schema().build();
        plain.migrate(db.dataSource());
        Outbox outbox = Outbox.builder().schema(plain).build();
        UUID first = v7(Instant.now());
        write(outbox, first);
        try (JvmProcess converter = JvmProcess.builder(ConversionProcessMain.class).name("converter")
                .jvmArgs("-Xmx128m").hook(TestHooks.CONVERT_AFTER_SPLIT, "kill")
                .args(db.jdbcUrl(), db.server().user(), db.server().password(), db.schema(), table,
                        Long.toString(Instant.now().toEpochMilli())).start()) {
            converter.awaitHook(TestHooks.CONVERT_AFTER_SPLIT, Duration.ofMinutes(1));
            assertThat(converter.awaitExit(Duration.ofSeconds(30))).isEqualTo(137);
        }
        assertThat(stage(plain)).isEqualTo("split");
        // the split tables' keys are apart: a writer repeating an event id of before the split is not refused
        write(outbox, first);
        UUID second = v7(Instant.now());
        write(outbox, second);
        schema().partitioned(OutboxPartitioning.daily()).build().migrate(db.dataSource());
        assertThat(stage(plain)).isEqualTo("partitioned");
        assertThat(db.queryLong("SELECT count(*) FROM " + plain.qualifiedOutboxTable() + " WHERE event_id = '"
                + first + "'")).isOne();
        assertThat(db.queryLong("SELECT count(*) FROM " + plain.qualifiedOutboxTable())).isEqualTo(2);
    }

    /** plain, split (plain with its legacy child) or partitioned. */
    private String stage(OutboxSchema s) {
        long partitioned = db.queryLong("SELECT count(*) FROM pg_class WHERE oid = '" + s.qualifiedOutboxTable()
                + "'::regclass AND relkind = 'p'");
        if (partitioned == 1) {
            return "partitioned";
        }
        return db.queryLong("SELECT count(*) FROM pg_inherits WHERE inhparent = '" + s.qualifiedOutboxTable()
                + "'::regclass") > 0 ? "split" : "plain";
    }

    /**
     * Threads that commit one event (an id of now) per transaction until closed, each over its own connection,
     * recording any failure.
     */
    private final class Writers implements AutoCloseable {
        /**
         * Between commits: near the rate the writers had when each row opened its own connection (~25 ms of
         * server CPU here): 56-71 commits of the two during a conversion.
         */
        private static final long PAUSE_MS = 25;

        final Queue<UUID> ids = new ConcurrentLinkedQueue<>();
        final List<Throwable> errors = Collections.synchronizedList(new ArrayList<>());
        final AtomicLong committed = new AtomicLong();
        private volatile boolean stop;
        private final List<Thread> threads = new ArrayList<>();

        Writers(Outbox outbox, int n) {
            for (int i = 0; i < n; i++) {
                Thread t = new Thread(() -> {
                    // one connection for the writer's life, as a pooled application holds it: its statements stay
                    // prepared across the conversion's table swap
                    try (Connection c = db.connect()) {
                        while (!stop) {
                            UUID id = v7(Instant.now());
                            write(c, outbox, id);
                            ids.add(id);
                            committed.incrementAndGet();
                            Thread.sleep(PAUSE_MS);
                        }
                    } catch (Throwable e) {
                        errors.add(e);
                    }
                }, "writer-" + i);
                threads.add(t);
                t.start();
            }
        }

        @Override
        public void close() throws InterruptedException {
            stop = true;
            for (Thread t : threads) {
                t.join();
            }
        }
    }
}
