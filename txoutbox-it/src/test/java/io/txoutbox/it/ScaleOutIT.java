package io.txoutbox.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.txoutbox.Outbox;
import io.txoutbox.OutboxSchema;
import io.txoutbox.kafka.KafkaTransport;
import io.txoutbox.testing.history.HistoryAssert;
import io.txoutbox.testing.history.HistoryReport;
import io.txoutbox.testing.history.LedgerWriter;
import io.txoutbox.testing.kafka.KafkaBroker;
import io.txoutbox.testing.net.TcpProxy;
import io.txoutbox.testing.postgres.TestDatabase;
import io.txoutbox.testing.postgres.TestPostgres;
import io.txoutbox.testing.postgres.TestSession;
import io.txoutbox.testing.process.JvmProcess;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.DisabledIf;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Several relay instances as separate JVMs on one outbox, while writers write: they race, get killed (also between
 * the broker's ack and the mark), paused past their lease, cut off from PostgreSQL, added and removed. The history
 * checker decides; takeover times are measured against the lease. One broker for the class, a topic per test (the
 * relays' transactional ids come from each test's own installation, so no test's producers meet another's).
 * On the row-state model (here) and, every scenario, on the cursor model ({@link ScaleOutCursorIT}, which
 * overrides {@link #progress}).
 */
class ScaleOutIT {

    private static final Logger log = LoggerFactory.getLogger(ScaleOutIT.class);
    private static final int LANES = 6;
    private static final int BATCH = 200;
    private static final long LEASE_MS = 3_000;

    private static KafkaBroker kafka;
    private TestDatabase db;
    /**
     * The test's own session for the polled counts (lanes held, pending rows): a new connection per poll cost
     * PostgreSQL a backend start each time, CPU taken from the relays under test.
     */
    private TestSession probe;
    private OutboxSchema schema;
    private String topic;
    private final List<JvmProcess> relays = new ArrayList<>();

    @BeforeAll
    static void startBroker() {
        kafka = KafkaBroker.builder().start();
    }

    @AfterAll
    static void stopBroker() {
        if (kafka != null) {
            kafka.close();
        }
    }

    @BeforeEach
    void setUp() {
        topic = "ledger-" + UUID.randomUUID();
        kafka.createTopic(topic, 6);
        db = TestPostgres.shared().newDatabase("scale_out");
        schema = ItSupport.schema(db, progress());
        probe = db.session();
    }

    @AfterEach
    void tearDown() throws SQLException {
        relays.forEach(JvmProcess::close);
        if (db != null) {
            db.close(); // and the test's session
        }
    }

    /** The outbox's progress model, for the relay processes and the test's own reads. */
    /**
     * What the resumed zombie logs once PostgreSQL has ended its session. On the row-state model its mark runs the
     * batch's UPDATE and is rejected. On the cursor model a batch of fresh rows that all went out has nothing to write
     * (the cursor moves with a settlement, not with each batch), so its mark sends no statement and the zombie finds
     * the session ended at its next statement — the claim, or the wait for the transport. Either way it records
     * nothing, and the new owner sends the batch again (the history's duplicates).
     */
    private String staleOwnerRejected() {
        return cursorProgress()
                ? ".*(mark rejected: the lane's session ended|batch failed, reconnecting: .*terminating connection due"
                        + " to idle|the lane's session ended while).*"
                : ".*mark rejected: the lane's session ended.*";
    }

    OutboxSchema.Progress progress() {
        return OutboxSchema.Progress.ROW_STATE;
    }

    /** Whether this run is the cursor model's (its duplicates and its zombie's end are bounded differently). */
    boolean cursorProgress() {
        return progress() == OutboxSchema.Progress.CURSOR;
    }

    /**
     * On the cursor model the build runs the kill and the pause scenarios (SIGKILL and SIGSTOP between ack and mark);
     * the other four with {@code -Dtxoutbox.it.cursor-scale-out=all}. All six passed on it on 2026-12-04 (03:50, and in
     * two CI runs, 10:57 and 11:34), but with both models' ScaleOutIT in the suite the CI run reached its 25 minutes.
     */
    boolean cursorScenarioSkipped() {
        return cursorProgress() && !"all".equals(System.getProperty("txoutbox.it.cursor-scale-out"));
    }

    private long queryLong(String sql) {
        return probe.queryLong(sql);
    }

    private JvmProcess relay(String name, String jdbcUrl, int expectedLanes, String hook) {
        return relay(name, jdbcUrl, expectedLanes, hook, KafkaTransport.Mode.TRANSACTIONAL);
    }

    private JvmProcess relay(String name, String jdbcUrl, int expectedLanes, String hook, KafkaTransport.Mode mode) {
        TestPostgres pg = db.server();
        // kept after the test (target/scale-out/<class>/<topic>/<name>.log) to read the relays' side of a failure
        JvmProcess.Builder b = JvmProcess.builder(RelayProcessMain.class).name(name).jvmArgs("-Xmx192m")
                .logFile(java.nio.file.Path.of("target", "scale-out", getClass().getSimpleName(), topic, name + ".log"))
                .systemProperty(RelayProcessMain.PROGRESS, progress().name())
                .args(jdbcUrl, pg.user(), pg.password(), db.schema(), kafka.bootstrapServers(),
                        Integer.toString(LANES), Integer.toString(BATCH), Long.toString(LEASE_MS),
                        Integer.toString(expectedLanes), mode.name());
        if (hook != null) {
            String[] parts = hook.split("=");
            b.hook(parts[0], parts[1]);
        }
        JvmProcess p = b.start();
        relays.add(p);
        return p;
    }

    private JvmProcess relay(String name, int expectedLanes) {
        return relay(name, db.server().jdbcUrl(), expectedLanes, null);
    }

    /** Lanes of this outbox whose advisory lock is held right now, by any instance. */
    private long lanesHeld() throws SQLException {
        return lanesHeldWhere("LIKE 'txoutbox-relay %'");
    }

    /** Lanes held by one relay process (its sessions' application_name carries its pid). */
    private long lanesHeldBy(JvmProcess relay) throws SQLException {
        return lanesHeldWhere("LIKE '%:" + relay.pid() + "#%'");
    }

    private long lanesHeldWhere(String applicationNameCondition) throws SQLException {
        java.util.zip.CRC32 crc = new java.util.zip.CRC32();
        crc.update((schema.schema() + "." + schema.outboxTable()).getBytes(java.nio.charset.StandardCharsets.UTF_8));
        return queryLong("SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid"
                + " WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1"
                + " AND l.classid::bigint = " + crc.getValue() + " AND (l.objid::bigint >> 16) = 1"
                + " AND a.application_name " + applicationNameCondition);
    }

    /** Rows pending as the progress model says (cursor: also those delivered but not yet under a cursor). */
    private long pending() throws SQLException {
        return queryLong("SELECT count(*) FROM " + schema.qualifiedOutboxTable() + " WHERE "
                + ItSupport.pending(schema));
    }

    /** Rows in the table, whatever their state: every committed event so far. */
    private long rows() throws SQLException {
        return queryLong("SELECT count(*) FROM " + schema.qualifiedOutboxTable());
    }

    /** The highest id written so far (0: none). */
    private long lastId() throws SQLException {
        return queryLong("SELECT coalesce(max(id), 0) FROM " + schema.qualifiedOutboxTable());
    }

    /**
     * Waits until no event up to {@code id} is PENDING: the lanes were worked past that point (and with them any
     * batch a paused or killed relay held then: published again).
     */
    private void awaitPublishedUpTo(long id) {
        await().atMost(Duration.ofMinutes(1)).pollInterval(Duration.ofMillis(100))
                .until(() -> queryLong("SELECT count(*) FROM " + schema.qualifiedOutboxTable()
                        + " WHERE " + ItSupport.pending(schema) + " AND id <= " + id) == 0);
    }

    private LedgerWriter writer(int events, double rate) {
        return writer(events, rate, 1);
    }

    private LedgerWriter writer(int events, double rate, int eventsPerTransaction) {
        Outbox outbox = Outbox.builder().schema(schema).build();
        return ItSupport.ledgerWriter(db, outbox, topic).threads(4).keys(500).events(events).targetRate(rate)
                .eventsPerTransaction(eventsPerTransaction).rollbackShare(0.02).build().start();
    }

    private HistoryReport finish(LedgerWriter writer) throws Exception {
        assertThat(writer.awaitDone(Duration.ofMinutes(5))).isTrue();
        assertThat(writer.errors()).isEmpty();
        await().atMost(Duration.ofMinutes(3)).until(() -> pending() == 0);
        HistoryReport report = ItSupport.check(db, kafka.bootstrapServers(), topic, Duration.ofMinutes(2));
        log.info("history: {}", report.summaryLine());
        return report;
    }

    /**
     * Waits until each of the relay's lanes logged its transactional producer ready. A relay's start() waits for that
     * at most 5 s and then lets its producers get ready in the background; under CI load a broker took 27 s to answer
     * their InitProducerId, so events written meanwhile wait for it (a stall of the relay's start, not of what a
     * scenario tests).
     */
    private static void awaitProducersReady(JvmProcess relay, int lanes) {
        java.util.regex.Pattern ready = java.util.regex.Pattern.compile(
                ".*txoutbox-kafka: lane (\\S+): transactional producer '.*' ready.*");
        await().atMost(Duration.ofMinutes(2)).pollInterval(Duration.ofMillis(100)).until(() -> relay.lines().stream()
                .map(ready::matcher).filter(java.util.regex.Matcher::matches).map(m -> m.group(1)).distinct()
                .count() >= lanes);
    }

    /** Time until the surviving instance holds every lane, after the other one went away. */
    private long takeoverMillis(JvmProcess survivor, long sinceNanos) {
        await().atMost(Duration.ofMinutes(1)).pollInterval(Duration.ofMillis(100))
                .until(() -> lanesHeldBy(survivor) == LANES);
        return TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - sinceNanos);
    }

    /**
     * Five events per writer transaction (one key, in sequence): the writers' commits, not the relays, pace this run,
     * and the three relays still race over fifty thousand events.
     */
    @DisabledIf(value = "cursorScenarioSkipped",
            disabledReason = "on the cursor model with -Dtxoutbox.it.cursor-scale-out=all")
    @Test
    void three_relay_processes_race_over_fifty_thousand_events_without_loss_or_reordering() throws Exception {
        for (int i = 0; i < 3; i++) {
            relay("relay-" + i, 1);
        }
        for (JvmProcess r : relays) {
            r.awaitLine("RELAY-OWNS-ALL-LANES.*", Duration.ofMinutes(2));
        }
        HistoryReport report;
        try (LedgerWriter w = writer(50_000, 0, 5)) {
            report = finish(w);
        }
        HistoryAssert.assertThat(report).isClean();
        assertThat(report.committed()).isGreaterThan(45_000);
    }

    /**
     * What a kill sends again is what the victim delivered and had not recorded: rows pending at the kill (row state:
     * its batches in flight; cursor: also what its lanes delivered since their last settlement). So the duplicates are
     * at most the rows pending just before each kill (for the first, which the victim's own hook makes, before the
     * victim starts) plus those committed until the victim is gone.
     */
    @Test
    void a_relay_killed_five_times_also_between_ack_and_mark_loses_nothing_and_its_lanes_are_taken_over()
            throws Exception {
        JvmProcess steady = relay("steady", LANES);
        steady.awaitLine("RELAY-OWNS-ALL-LANES.*", Duration.ofMinutes(2));
        awaitProducersReady(steady, LANES);
        List<Long> takeovers = new ArrayList<>();
        long unrecordedAtKills = 0;
        try (LedgerWriter w = writer(30_000, 1_500)) {
            for (int kill = 0; kill < 5; kill++) {
                long pendingBefore = pending();
                long rowsBefore = rows();
                JvmProcess victim = kill == 0
                        ? relay("victim-" + kill, db.server().jdbcUrl(), 1, "after-ack-before-mark=kill")
                        : relay("victim-" + kill, 1);
                victim.awaitLine("RELAY-OWNS-ALL-LANES.*", Duration.ofMinutes(2));
                long t0;
                if (kill == 0) {
                    victim.awaitHook("after-ack-before-mark", Duration.ofMinutes(2));
                    victim.awaitExit(Duration.ofSeconds(30));
                    t0 = System.nanoTime();
                } else {
                    Thread.sleep(1_000 + 500L * kill); // the fault's schedule: let it work a while, then kill it
                    pendingBefore = pending();
                    rowsBefore = rows();
                    victim.kill();
                    t0 = System.nanoTime();
                    victim.awaitExit(Duration.ofSeconds(30));
                }
                unrecordedAtKills += pendingBefore + rows() - rowsBefore;
                takeovers.add(takeoverMillis(steady, t0));
            }
            HistoryReport report = finish(w);
            log.info("{} progress: at most {} events unrecorded at the kills; {}", progress(), unrecordedAtKills,
                    report.summaryLine());
            // A liveness guard, not the test of one defect: no key waits longer than the 10 s lease plus a margin
            // through every kill and takeover. Measured 0.4–1.2 s alone on both models, 8.2 s in the CI run of
            // 2026-12-04 12:01 (cursor model, beside the row-state run in the build's other test JVM), which failed
            // the first bound of 5 s. A lane that resumed on a producer the victim had fenced stalled 3.6–7.2 s alone
            // and 59 s in CI (RELIABILITY.md, "A lane taken back sent its first batch on a fenced producer"), so this
            // bound catches that only at its worst; FencingIdentityIT's retake test is that defect's own test.
            // The cursor run measured 8.2, 18.5, 36.9 and 22.4 s in four CI runs of 2026-12-04. The last (run of
            // 52dfdd4, where the report first named the stall's start) was the steady relay's start: the writer began
            // once its lanes were owned, and its producers were ready 27 s after its start (InitProducerId unanswered
            // by a loaded broker); no takeover was involved. So the writer now waits for the steady relay's producers,
            // and both models have the same guard.
            HistoryAssert.assertThat(report).isClean().hasLongestStallBelow(Duration.ofSeconds(15));
            assertThat(report.duplicates()).as("at most what was pending at the kills").isLessThanOrEqualTo(
                    unrecordedAtKills);
            if (!cursorProgress()) {
                assertThat(report.duplicates()).as("at most the batches in flight of each kill")
                        .isLessThanOrEqualTo((long) BATCH * LANES * 5);
            }
        }
        log.info("takeover after SIGKILL, ms: {}", takeovers);
        assertThat(takeovers).allSatisfy(ms -> assertThat(ms).isLessThan(10_000));
    }

    /**
     * Mode.IDEMPOTENT has no producer fencing: a relay killed between ack and mark, and one paused there past its
     * lease and then woken (its producer may still append what it held), next to a steady one, during one run.
     */
    @DisabledIf(value = "cursorScenarioSkipped",
            disabledReason = "on the cursor model with -Dtxoutbox.it.cursor-scale-out=all")
    @Test
    void idempotent_mode_keeps_order_through_a_kill_and_a_pause_between_ack_and_mark() throws Exception {
        String url = db.server().jdbcUrl();
        JvmProcess steady = relay("steady", url, 1, null, KafkaTransport.Mode.IDEMPOTENT);
        steady.awaitLine("RELAY-OWNS-ALL-LANES.*", Duration.ofMinutes(2));
        JvmProcess victim = relay("victim", url, 1, "after-ack-before-mark=kill", KafkaTransport.Mode.IDEMPOTENT);
        JvmProcess zombie = relay("zombie", url, 1, "after-ack-before-mark=stop", KafkaTransport.Mode.IDEMPOTENT);
        victim.awaitLine("RELAY-OWNS-ALL-LANES.*", Duration.ofMinutes(2));
        zombie.awaitLine("RELAY-OWNS-ALL-LANES.*", Duration.ofMinutes(2));
        try (LedgerWriter w = writer(30_000, 1_500)) {
            victim.awaitHook("after-ack-before-mark", Duration.ofMinutes(2));
            victim.awaitExit(Duration.ofSeconds(30));
            zombie.awaitHook("after-ack-before-mark", Duration.ofMinutes(2));
            await().atMost(Duration.ofSeconds(10)).until(zombie::isStopped);
            long stoppedAt = System.nanoTime();
            takeoverMillis(steady, stoppedAt);
            // the fault: stay paused past the lease until the steady relay worked its lanes past the paused batch
            awaitPublishedUpTo(lastId());
            zombie.resume();
            zombie.awaitLine(staleOwnerRejected(), Duration.ofMinutes(1));
            HistoryReport report = finish(w);
            HistoryAssert.assertThat(report).isClean();
            assertThat(report.duplicates()).as("the killed and the paused batches were sent again").isPositive();
        }
    }

    @Test
    void a_relay_paused_between_ack_and_mark_past_its_lease_is_fenced_and_its_stale_mark_rejected()
            throws Exception {
        // started together: both hold a lane before the writers start, as when the zombie joins later
        JvmProcess steady = relay("steady", 1);
        JvmProcess zombie = relay("zombie", db.server().jdbcUrl(), 1, "after-ack-before-mark=stop");
        steady.awaitLine("RELAY-OWNS-ALL-LANES.*", Duration.ofMinutes(2));
        zombie.awaitLine("RELAY-OWNS-ALL-LANES.*", Duration.ofMinutes(2));
        try (LedgerWriter w = writer(20_000, 1_500)) {
            zombie.awaitHook("after-ack-before-mark", Duration.ofMinutes(2));
            long stoppedAt = System.nanoTime();
            await().atMost(Duration.ofSeconds(10)).until(zombie::isStopped);
            long takeover = takeoverMillis(steady, stoppedAt);
            assertThat(takeover).as("not before the lease ran out").isGreaterThanOrEqualTo(LEASE_MS - 500);
            // the fault: stay paused past the lease until the others worked its lanes past the paused batch
            awaitPublishedUpTo(lastId());
            zombie.resume();
            zombie.awaitLine(staleOwnerRejected(), Duration.ofMinutes(1));
            HistoryReport report = finish(w);
            HistoryAssert.assertThat(report).isClean();
            assertThat(report.duplicates()).as("the paused batch was acknowledged, then sent again by the new owner")
                    .isPositive();
            log.info("takeover of a paused relay's lanes: {} ms (lease {} ms)", takeover, LEASE_MS);
            assertThat(takeover).isLessThan(LEASE_MS + 10_000);
        }
    }

    @DisabledIf(value = "cursorScenarioSkipped",
            disabledReason = "on the cursor model with -Dtxoutbox.it.cursor-scale-out=all")
    @Test
    void relays_added_and_removed_during_the_run_rebalance_without_loss_or_reordering() throws Exception {
        JvmProcess first = relay("first", LANES);
        first.awaitLine("RELAY-OWNS-ALL-LANES.*", Duration.ofMinutes(2));
        try (LedgerWriter w = writer(30_000, 2_000)) {
            JvmProcess second = relay("second", 1);
            second.awaitLine("RELAY-OWNS-ALL-LANES.*", Duration.ofMinutes(2));
            JvmProcess third = relay("third", 1);
            third.awaitLine("RELAY-OWNS-ALL-LANES.*", Duration.ofMinutes(2));
            await().atMost(Duration.ofMinutes(1)).until(() -> lanesHeldBy(first) == 2 && lanesHeldBy(second) == 2
                    && lanesHeldBy(third) == 2);
            second.terminate(); // orderly: its lanes are handed over at once
            second.awaitExit(Duration.ofSeconds(30));
            long t0 = System.nanoTime();
            await().atMost(Duration.ofMinutes(1)).until(() -> lanesHeldBy(first) + lanesHeldBy(third) == LANES);
            log.info("lanes of an orderly stopped relay taken over in {} ms",
                    TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0));
            first.terminate();
            first.awaitExit(Duration.ofSeconds(30));
            takeoverMillis(third, System.nanoTime());
            relay("fourth", 1).awaitLine("RELAY-OWNS-ALL-LANES.*", Duration.ofMinutes(2));
            HistoryReport report = finish(w);
            HistoryAssert.assertThat(report).isClean();
        }
    }

    @DisabledIf(value = "cursorScenarioSkipped",
            disabledReason = "on the cursor model with -Dtxoutbox.it.cursor-scale-out=all")
    @Test
    void a_relay_cut_off_from_postgresql_past_its_lease_loses_its_lanes_and_nothing_else() throws Exception {
        TestPostgres pg = db.server();
        try (TcpProxy proxy = TcpProxy.start("127.0.0.1", pg.port())) {
            String viaProxy = pg.jdbcUrl().replaceFirst("//[^/]+/", "//127.0.0.1:" + proxy.port() + "/");
            // started together: each holds a lane before the writers start
            JvmProcess steady = relay("steady", 1);
            JvmProcess cut = relay("cut", viaProxy, 1, null);
            steady.awaitLine("RELAY-OWNS-ALL-LANES.*", Duration.ofMinutes(2));
            cut.awaitLine("RELAY-OWNS-ALL-LANES.*", Duration.ofMinutes(2));
            try (LedgerWriter w = writer(20_000, 1_500)) {
                await().atMost(Duration.ofMinutes(1)).until(() -> pending() < 20_000);
                await().atMost(Duration.ofMinutes(1)).until(() -> lanesHeldBy(cut) > 0);
                proxy.freeze();
                long frozenAt = System.nanoTime();
                // the steady instance takes every lane once PostgreSQL ends the frozen instance's sessions
                await().atMost(Duration.ofMinutes(1)).pollInterval(Duration.ofMillis(100))
                        .until(() -> lanesHeldBy(steady) == LANES);
                long takeover = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - frozenAt);
                proxy.unfreeze();
                HistoryReport report = finish(w);
                HistoryAssert.assertThat(report).isClean();
                log.info("lanes of a relay cut off from PostgreSQL held again after {} ms", takeover);
                assertThat(takeover).isLessThan(LEASE_MS + 15_000);
            }
        }
    }
}
