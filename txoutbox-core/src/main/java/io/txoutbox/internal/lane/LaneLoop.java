package io.txoutbox.internal.lane;

import io.txoutbox.internal.BackendCheck;
import io.txoutbox.internal.Misconfigured;
import io.txoutbox.internal.Privileges;
import io.txoutbox.internal.pg.AdvisoryLocks;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The loop of one lane — of the relay or of an inbox worker — one way for both: take the lane's advisory lock on one
 * session ({@link LaneLock}) configured for the lease ({@link Work#configure}, {@link SessionLease}), prove that
 * statements run on the session holding it ({@link BackendCheck}), work it batch by batch ({@link Work#runBatch}), keep
 * the lease with a statement every third of it in every wait ({@link LeaseKeeper}), stand by and retry while another
 * session holds the lane, let the session go when it is lost, back off after an outage or an error, and stop on
 * {@link #stop()} or an interrupt. What a batch is belongs to the {@link Work}.
 */
public final class LaneLoop implements Runnable {

    private static final Logger log = LoggerFactory.getLogger(LaneLoop.class);
    private static final Duration STANDBY_RETRY = Duration.ofSeconds(1);
    /** After a nudge the lane polls again soon: the nudging writer may not have committed yet. */
    private static final long NUDGE_WINDOW_NANOS = TimeUnit.MILLISECONDS.toNanos(200);

    /** What the lane works: the relay's lane or an inbox worker's. Called on the lane's thread only. */
    public interface Work {
        /** The lane's advisory lock. */
        AdvisoryLocks.Key laneKey();

        /** The shared lock on the lane count, which a process with another lane count is told by. */
        AdvisoryLocks.Key laneCountKey();

        int lanes();

        /** Null when this process may try to own the lane now, else why it stands by (no connection is taken). */
        String reserve();

        /** The reservation of {@link #reserve} did not become the ownership of the lane. */
        void unreserve();

        /** Sets the lane's session up (autocommit on); returns the isolation level it had, for the reset. */
        int configure(Connection c) throws SQLException;

        /** Why the lane stands by while another session holds its lock. */
        String takenReason();

        /** The lane is free but others work with {@code otherLaneCounts} lanes: this one waits (say why). */
        void laneCountConflict(List<Integer> otherLaneCounts);

        /** The lane is this session's now (still in autocommit): another session may have owned it meanwhile. */
        void owned(Connection c) throws SQLException;

        /** After each try to own the lane. */
        void tried(boolean owns);

        /** One turn on the lane's session; between turns the session is in no transaction. */
        Outcome runBatch(Connection c) throws Exception;

        /** The lane let its session go; {@code wasOwner}: it owned the lane on it. */
        void released(boolean wasOwner);

        /**
         * A turn failed with {@code t}; {@code fatal}: retrying cannot help (permission denied, or statements that do
         * not run on the lane's session), the lane stops.
         */
        void failed(Throwable t, boolean fatal);

        /** The loop ends; {@code c}: the lane's session (null: none), let go right after. */
        void stopped(Connection c);
    }

    /**
     * {@code name}: the lanes' name in log lines ({@code txoutbox-relay}); {@code component}: who the backend check
     * names ("relay", "inbox worker"); {@code scope}: what the lane works, for its start line; {@code callBudget}: how
     * long the lease is kept for one call out of the lane ({@link LeaseKeeper#away}); {@code linger}: how long a
     * lane that has caught up waits before its next turn, so that work arriving meanwhile is taken in one turn (after
     * a nudge wakes it, after a turn that was not full); zero: at once.
     */
    public record Settings(String name, String component, String laneId, String scope, DataSource dataSource,
            Duration leaseTimeout, Duration pollInterval, Duration outageBackoffMax, Duration callBudget,
            Duration linger) {
    }

    private final Settings settings;
    private final String name;
    private final String laneId;
    private final Work work;
    private final long heartbeatNanos;
    private final long lingerNanos;
    private final Semaphore wake = new Semaphore(0);
    private final LeaseKeeper keeper;
    private final BackendCheck backendCheck;

    private volatile boolean stopping;
    private volatile boolean owner;
    private volatile long nudgedAt = System.nanoTime() - NUDGE_WINDOW_NANOS * 2;
    private volatile long ownedSinceMillis;
    private volatile long lastLoopMillis;
    private Connection connection;
    /** The isolation level the connection had before the lane pinned READ COMMITTED. */
    private int isolation = Connection.TRANSACTION_READ_COMMITTED;
    private long outageBackoffMs;
    /** When the current turn began ({@link System#nanoTime}). */
    private long turnStartNanos;
    private long errorBackoffMs;
    private String standbyReason;

    public LaneLoop(Settings settings, Work work) {
        this.settings = settings;
        this.name = settings.name();
        this.laneId = settings.laneId();
        this.work = work;
        this.heartbeatNanos = settings.leaseTimeout().toNanos() / 3;
        this.lingerNanos = settings.linger().toNanos();
        this.keeper = new LeaseKeeper(name, laneId, heartbeatNanos, settings.callBudget().toNanos());
        this.backendCheck = new BackendCheck(settings.component());
    }

    /** Keeps the lease while the lane's thread is away from its session. */
    public LeaseKeeper keeper() {
        return keeper;
    }

    /** The proof, for the lane's marks, that they run on the session holding the lane. */
    public BackendCheck backendCheck() {
        return backendCheck;
    }

    /** The lane's session now (lane thread only); null once it was let go. */
    public Connection connection() {
        return connection;
    }

    public boolean isOwner() {
        return owner;
    }

    public boolean isStopping() {
        return stopping;
    }

    /** Since when the lane is owned (epoch ms), or 0: not owned. */
    public long ownedSinceMillis() {
        return owner ? ownedSinceMillis : 0L;
    }

    /** When the lane last went once round its loop (a batch, an empty claim, a pause), or 0: never. */
    public long lastLoopMillis() {
        return lastLoopMillis;
    }

    /** New work may be there: an idle lane looks at once, and again soon after. */
    public void nudge() {
        nudgedAt = System.nanoTime();
        if (wake.availablePermits() == 0) {
            wake.release();
        }
    }

    public void stop() {
        stopping = true;
        wake.release();
    }

    @Override
    public void run() {
        log.info("{} {}: lane started for {}", name, laneId, settings.scope());
        try {
            while (!stopping) {
                try {
                    boolean owns = ensureOwnership();
                    work.tried(owns);
                    if (!owns) {
                        pause(STANDBY_RETRY.toMillis());
                        continue;
                    }
                    turnStartNanos = System.nanoTime();
                    turn(work.runBatch(connection));
                } catch (InterruptedException e) { // the lane's thread is being stopped
                    Thread.currentThread().interrupt();
                    stopping = true;
                } catch (Throwable t) { // the loop never dies; it reconnects and goes on
                    failed(t);
                }
            }
        } finally {
            work.stopped(connection);
            release();
            keeper.close();
            log.info("{} {}: lane stopped", name, laneId);
        }
    }

    private void turn(Outcome outcome) throws InterruptedException {
        if (outcome == Outcome.HOLD) {
            pause(STANDBY_RETRY.toMillis());
            return;
        }
        if (outcome == Outcome.HAND_OVER) {
            release();
            pause(STANDBY_RETRY.toMillis());
            return;
        }
        lastLoopMillis = System.currentTimeMillis();
        errorBackoffMs = 0;
        if (outcome != Outcome.LEASE_LOST && connection != null && keeper.isLost()) {
            // found in a call out of the lane after the batch was recorded: nothing to do again
            log.warn("{} {}: lost the lane's session ({})", name, laneId, keeper.lostReason());
            release();
        }
        switch (outcome) {
            case IDLE -> idle();
            case OUTAGE -> pause(nextOutageBackoff());
            case WORKED -> outageBackoffMs = 0;
            case CAUGHT_UP -> {
                outageBackoffMs = 0;
                linger(turnStartNanos + lingerNanos);
            }
            case LEASE_LOST -> release(); // the next turn finds out who owns the lane now
            default -> throw new IllegalStateException(outcome.name());
        }
    }

    private void failed(Throwable t) {
        boolean mismatch = BackendCheck.isMismatch(t);
        Misconfigured misconfigured = Misconfigured.in(t);
        boolean fatal = mismatch || misconfigured != null || Privileges.isDenied(t);
        work.failed(t, fatal);
        if (mismatch) {
            // configuration, not a fault: another cycle runs behind the same pooler
            log.error("{} {}: the lane stops: {}", name, laneId, BackendCheck.message(t));
        } else if (misconfigured != null) {
            // the component says why, once, for all its lanes
            log.debug("{} {}: the lane stops: {}", name, laneId, misconfigured.getMessage());
        } else if (fatal) {
            // not worth a retry: the next cycle meets the same missing grant (the component says which)
            log.error("{} {}: permission denied, the lane stops: {}", name, laneId, t.toString());
        } else {
            log.error("{} {}: batch failed, reconnecting: {}", name, laneId, t.toString(), t);
        }
        release();
        if (fatal) {
            stopping = true;
            return;
        }
        errorBackoffMs = Math.min(5_000, Math.max(100, errorBackoffMs * 2));
        pause(errorBackoffMs);
    }

    // ---- ownership -------------------------------------------------------------------------------------------

    private boolean ensureOwnership() throws SQLException {
        if (owner && connection != null) {
            return true;
        }
        String refusal = work.reserve();
        if (refusal != null) {
            standby(refusal);
            return false;
        }
        boolean reserved = true;
        try {
            if (connection == null) {
                connection = settings.dataSource().getConnection();
                connection.setAutoCommit(true);
                isolation = work.configure(connection);
            }
            LaneLock.Result lock = LaneLock.tryAcquire(connection, work.laneKey(), work.laneCountKey(), work.lanes());
            if (lock.outcome() == LaneLock.Outcome.TAKEN) {
                standby(work.takenReason());
                release(); // a standby holds no connection between tries
                return false;
            }
            if (lock.outcome() == LaneLock.Outcome.LANE_COUNT_CONFLICT) {
                work.laneCountConflict(lock.otherLaneCounts());
                release();
                return false;
            }
            backendCheck.acquired(connection, work.laneKey().single()); // not behind a pooler
            lastLoopMillis = System.currentTimeMillis();
            ownedSinceMillis = System.currentTimeMillis();
            work.owned(connection);
            owner = true;
            reserved = false; // the reservation is the ownership now
            standbyReason = null;
            connection.setAutoCommit(false);
            keeper.talked();
            return true;
        } finally {
            if (reserved) {
                work.unreserve();
            }
        }
    }

    private void standby(String reason) {
        if (!reason.equals(standbyReason)) {
            log.info("{} {}: standing by: {}", name, laneId, reason);
            standbyReason = reason;
        }
    }

    /** Lets the lane's session go: its locks released, its settings reset, back to the pool. */
    private void release() {
        Connection c = connection;
        connection = null;
        keeper.reset(); // what a lost session said ends with it
        boolean wasOwner = owner;
        owner = false;
        work.released(wasOwner);
        if (c == null) {
            return;
        }
        try {
            SessionLease.reset(c, isolation);
        } catch (SQLException e) {
            log.debug("{} {}: could not reset connection: {}", name, laneId, e.toString());
        } finally {
            try {
                c.close();
            } catch (SQLException ignored) {
                // closing a broken connection
            }
        }
    }

    // ---- waiting ---------------------------------------------------------------------------------------------

    /**
     * Keeps the lease while the lane waits: a statement at least every third of it. Returns false — and lets the
     * lane go — when the session is gone: the lease was lost.
     */
    private boolean heartbeat() {
        if (!owner || connection == null || keeper.beatIfDue(connection)) {
            return true;
        }
        log.warn("{} {}: lost the lane's session while waiting ({}); another process may own it now", name, laneId,
                keeper.lostReason());
        release();
        return false;
    }

    /** The lane's next outage pause, growing from 100 ms up to the outage maximum. */
    public long outageDelayMs() {
        return Math.min(settings.outageBackoffMax().toMillis(), Math.max(100, outageBackoffMs * 2));
    }

    private long nextOutageBackoff() {
        outageBackoffMs = outageDelayMs();
        log.warn("{} {}: transport unavailable, pausing {} ms", name, laneId, outageBackoffMs);
        return outageBackoffMs;
    }

    /**
     * Nothing to do: looks again at a nudge or after the poll interval — soon after a nudge, as the writer may not
     * have committed yet — and keeps the lease meanwhile.
     */
    private void idle() throws InterruptedException {
        long sinceNudge = System.nanoTime() - nudgedAt;
        if (sinceNudge < NUDGE_WINDOW_NANOS) {
            long nanos = TimeUnit.MILLISECONDS.toNanos(Math.min(Math.max(1, TimeUnit.NANOSECONDS.toMillis(sinceNudge)
                    / 4), 20));
            if (lingerNanos > 0) { // the next look also gathers what arrives meanwhile
                linger(System.nanoTime() + Math.max(nanos, lingerNanos));
                return;
            }
            wake.tryAcquire(nanos, TimeUnit.NANOSECONDS);
            heartbeat();
            return;
        }
        long deadline = System.nanoTime() + settings.pollInterval().toNanos();
        while (!stopping) {
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                return;
            }
            // an idle lane still talks every third of the lease, so it keeps its lane
            boolean woken = wake.tryAcquire(Math.min(left, heartbeatNanos), TimeUnit.NANOSECONDS);
            if (!heartbeat()) {
                return;
            }
            if (woken) {
                linger(System.nanoTime() + lingerNanos); // what the nudger's neighbours commit goes in the same turn
                return;
            }
        }
    }

    /** Waits until {@code deadlineNanos} ({@link System#nanoTime}); a nudge does not cut it short. */
    private void linger(long deadlineNanos) {
        long left = deadlineNanos - System.nanoTime();
        if (left > 0) {
            pauseNanos(left);
        }
    }

    /** Waits {@code ms}, keeping the lease, unless the lane stops; a nudge does not cut it short. */
    public void pause(long ms) {
        pauseNanos(TimeUnit.MILLISECONDS.toNanos(ms));
    }

    private void pauseNanos(long nanos) {
        try {
            long deadline = System.nanoTime() + nanos;
            while (!stopping) {
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    return;
                }
                // a nudge must not cut a backoff short: drain it and keep waiting
                wake.tryAcquire(Math.min(left, heartbeatNanos), TimeUnit.NANOSECONDS);
                heartbeat();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            stopping = true;
        }
    }
}
