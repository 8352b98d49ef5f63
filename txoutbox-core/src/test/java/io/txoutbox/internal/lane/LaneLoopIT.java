package io.txoutbox.internal.lane;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.txoutbox.internal.pg.AdvisoryLocks;
import io.txoutbox.testing.postgres.PostgresExtension;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.Queue;
import java.util.UUID;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The shared lane loop on a real session, with a lane whose work does nothing: the lease kept while it idles, a
 * terminated session let go and the lane taken again on a new one, an interrupt that stops the lane.
 */
class LaneLoopIT {

    @RegisterExtension
    static final PostgresExtension postgres = new PostgresExtension();

    private static final Duration LEASE = Duration.ofSeconds(1);

    private final String name = "loop-" + UUID.randomUUID().toString().substring(0, 8);
    private final NoWork work = new NoWork(UUID.randomUUID().hashCode());
    private Thread thread;
    private LaneLoop loop;

    /** A lane that owns and idles; it counts what the loop tells it. */
    private final class NoWork implements LaneLoop.Work {
        final int consumerHash;
        final AtomicInteger owned = new AtomicInteger();
        final AtomicInteger turns = new AtomicInteger();
        /** What the turns return, in order (IDLE once used up), and when each turn began. */
        final Queue<Outcome> script = new ConcurrentLinkedQueue<>();
        final List<Long> turnNanos = new CopyOnWriteArrayList<>();
        final Queue<Throwable> failures = new ConcurrentLinkedQueue<>();

        NoWork(int consumerHash) {
            this.consumerHash = consumerHash;
        }

        @Override
        public AdvisoryLocks.Key laneKey() {
            return AdvisoryLocks.inboxLane(consumerHash, 0);
        }

        @Override
        public AdvisoryLocks.Key laneCountKey() {
            return AdvisoryLocks.inboxLaneCount(consumerHash, 1);
        }

        @Override
        public int lanes() {
            return 1;
        }

        @Override
        public String reserve() {
            return null;
        }

        @Override
        public void unreserve() {
        }

        @Override
        public int configure(Connection c) throws SQLException {
            return SessionLease.configure(c, new SessionLease.Settings(Duration.ofSeconds(5), Duration.ofSeconds(5),
                    LEASE, LEASE.multipliedBy(4), LEASE, "txoutbox-test " + name));
        }

        @Override
        public String takenReason() {
            return "taken";
        }

        @Override
        public void laneCountConflict(List<Integer> otherLaneCounts) {
        }

        @Override
        public void owned(Connection c) {
            owned.incrementAndGet();
        }

        @Override
        public void tried(boolean owns) {
        }

        @Override
        public Outcome runBatch(Connection c) throws SQLException {
            turnNanos.add(System.nanoTime());
            turns.incrementAndGet();
            Outcome next = script.poll();
            return next == null ? Outcome.IDLE : next;
        }

        @Override
        public void released(boolean wasOwner) {
        }

        @Override
        public void failed(Throwable t, boolean fatal) {
            failures.add(t);
        }

        @Override
        public void stopped(Connection c) {
        }
    }

    /** Starts the lane with a poll interval longer than the lease: only heartbeats keep its session. */
    private void start() {
        start(Duration.ZERO);
    }

    private void start(Duration linger) {
        loop = new LaneLoop(new LaneLoop.Settings("txoutbox-test", "test", name, "a test", postgres.database()
                .dataSource(), LEASE, Duration.ofSeconds(30), LEASE, LEASE, linger), work);
        thread = new Thread(loop, "txoutbox-test-" + name);
        thread.start();
        await().atMost(Duration.ofSeconds(10)).until(loop::isOwner);
    }

    @Test
    void a_lane_that_caught_up_lingers_before_its_next_turn_and_one_after_a_full_batch_goes_on_at_once() {
        work.script.addAll(List.of(Outcome.WORKED, Outcome.WORKED, Outcome.CAUGHT_UP));
        start(Duration.ofMillis(1_000));
        await().atMost(Duration.ofSeconds(10)).until(() -> work.turns.get() >= 4);
        List<Long> t = work.turnNanos;
        assertThat(millis(t.get(0), t.get(1))).as("after a full batch, ms").isLessThan(500);
        assertThat(millis(t.get(1), t.get(2))).as("after a full batch, ms").isLessThan(500);
        assertThat(millis(t.get(2), t.get(3))).as("after a batch that was not full, ms").isGreaterThanOrEqualTo(1_000);
    }

    @Test
    void a_nudge_wakes_an_idle_lane_after_its_linger() throws InterruptedException {
        start(Duration.ofMillis(400));
        await().atMost(Duration.ofSeconds(10)).until(() -> work.turns.get() >= 1);
        Thread.sleep(100); // the lane waits for its poll interval (30 s) now
        long nudged = System.nanoTime();
        loop.nudge();
        await().atMost(Duration.ofSeconds(10)).until(() -> work.turns.get() >= 2);
        assertThat(millis(nudged, work.turnNanos.get(1))).as("nudge to the next turn, ms")
                .isGreaterThanOrEqualTo(400).isLessThan(5_000);
    }

    @Test
    void without_a_linger_a_nudge_wakes_an_idle_lane_at_once() throws InterruptedException {
        start();
        await().atMost(Duration.ofSeconds(10)).until(() -> work.turns.get() >= 1);
        Thread.sleep(100);
        long nudged = System.nanoTime();
        loop.nudge();
        await().atMost(Duration.ofSeconds(10)).until(() -> work.turns.get() >= 2);
        assertThat(millis(nudged, work.turnNanos.get(1))).as("nudge to the next turn, ms").isLessThan(300);
    }

    private static long millis(long fromNanos, long toNanos) {
        return java.util.concurrent.TimeUnit.NANOSECONDS.toMillis(toNanos - fromNanos);
    }

    @AfterEach
    void stop() throws InterruptedException {
        loop.stop();
        thread.join(10_000);
    }

    private long sessions() {
        return postgres.database().queryLong("SELECT count(*) FROM pg_stat_activity WHERE application_name = "
                + "'txoutbox-test " + name + "'");
    }

    private boolean lockIsFree() throws SQLException {
        try (Connection c = postgres.database().connect()) {
            return work.laneKey().tryLock(c); // let go again when c closes
        }
    }

    @Test
    void an_idle_lane_keeps_its_session_and_its_lock_past_several_leases() throws Exception {
        start();
        Thread.sleep(3_500); // three and a half leases: idle_session_timeout would have ended a silent session
        assertThat(work.failures).isEmpty();
        assertThat(work.owned).as("owned once, never lost").hasValue(1);
        assertThat(work.turns.get()).as("a poll interval of 30 s: one turn, heartbeats in between").isEqualTo(1);
        assertThat(sessions()).isEqualTo(1);
        assertThat(lockIsFree()).isFalse();
    }

    @Test
    void a_lane_whose_session_was_ended_takes_its_lane_again_on_a_new_session() throws Exception {
        start();
        long ended = postgres.database().queryLong("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
                + " WHERE application_name = 'txoutbox-test " + name + "'");
        assertThat(ended).isEqualTo(1);
        // the next heartbeat (within a third of the lease) finds the session gone; the lane takes its lane again
        await().atMost(Duration.ofSeconds(10)).until(() -> work.owned.get() == 2 && loop.isOwner());
        assertThat(sessions()).isEqualTo(1);
        assertThat(lockIsFree()).isFalse();
    }

    @Test
    void an_interrupt_stops_the_lane_and_lets_its_lock_go_without_a_loop_error() throws Exception {
        start();
        thread.interrupt();
        thread.join(5_000);
        assertThat(thread.isAlive()).isFalse();
        assertThat(loop.isOwner()).isFalse();
        assertThat(work.failures).isEmpty();
        await().atMost(Duration.ofSeconds(5)).until(() -> sessions() == 0);
        assertThat(lockIsFree()).isTrue();
    }
}
