package io.txoutbox.internal.lane;

import io.txoutbox.internal.pg.LaneStatements;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Keeps a lane's lease — its session, which holds the lane's advisory lock — alive while the lane's thread is busy
 * outside the database: a statement ({@code SELECT 1}) at least every third of the lease, whatever the lane waits for.
 *
 * <p>The lane's thread says when it leaves the connection alone ({@link #away}, {@link #await}): for a send call (which
 * a transport may make blocking), for the transport's verdict, for a previous unfinished send, for a dead-letter send,
 * for listener callbacks. Meanwhile the keeper's own thread sends the heartbeat on the lane's connection; the lane's
 * thread takes the connection back only once a heartbeat in progress has ended (one lock), so the connection is never
 * used by two threads at once. Regions lie between transactions only: the heartbeat commits.
 *
 * <p>When a heartbeat fails the session is gone and another instance may own the lane: the keeper remembers it
 * ({@link #isLost}), a wait for the transport ends within a quarter of the heartbeat interval
 * ({@link LeaseLostException}), and the lane neither marks nor sends again on that session. While the lane's own
 * thread waits (idle, backoff) it sends the heartbeat itself ({@link #beatIfDue}): the same statement, the same
 * bookkeeping.
 *
 * <p>A call out of the lane ({@link #away}: the transport's send call, a listener callback) is kept alive for at most
 * the call budget ({@code relay.sendTimeout}); a call that hangs longer gets no more heartbeats, so the server ends
 * the session within the lease and another instance can take the lane over instead of it staying pinned by a stuck
 * thread. When the call returns the lane finds the lease lost.
 */
public final class LeaseKeeper implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(LeaseKeeper.class);

    /** The lane's session ended while the lane waited: it is no longer the lane's owner. */
    public static final class LeaseLostException extends Exception {
        private static final long serialVersionUID = 1L;

        public LeaseLostException(String message, Throwable cause) {
            super(message, cause, false, false);
        }
    }

    /** Work on the lane's thread that leaves the connection alone. */
    @FunctionalInterface
    public interface Away<T, E extends Exception> {
        T call() throws E;
    }

    private final String name;
    private final String laneId;
    private final long beatNanos;
    private final long callBudgetNanos;
    private final ReentrantLock lock = new ReentrantLock();
    private final Condition closing = lock.newCondition();
    private volatile long lastTalkNanos = System.nanoTime();
    /** The connection the keeper's thread keeps alive while the lane's thread is away from it; guarded by lock. */
    private Connection held;
    /** Until when the keeper's thread keeps the held connection alive (System.nanoTime); guarded by lock. */
    private long heldUntil;
    private boolean closed;
    private Thread thread;
    private volatile SQLException lost;

    /** {@code name}: the lanes' name in log lines and thread names ({@code txoutbox-relay}, {@code txoutbox-inbox}). */
    public LeaseKeeper(String name, String laneId, long beatNanos, long callBudgetNanos) {
        this.name = name;
        this.laneId = laneId;
        this.beatNanos = beatNanos;
        this.callBudgetNanos = callBudgetNanos;
    }

    /** The lane just ran a statement on its session. */
    public void talked() {
        lastTalkNanos = System.nanoTime();
    }

    /** The lane let its session go: what that session's loss said no longer applies to the next one. */
    public void reset() {
        lost = null;
    }

    public boolean isLost() {
        return lost != null;
    }

    /** Why the session was found gone (null: it was not). */
    public String lostReason() {
        SQLException e = lost;
        if (e == null) {
            return null;
        }
        return e.getSQLState() == null ? e.getMessage() : e.getMessage() + " (SQLState " + e.getSQLState() + ")";
    }

    /**
     * Before the lane starts something it must do only as the owner (a send): a heartbeat if one is due, and throws
     * when the session is gone.
     */
    public void ensureOwner(Connection c, String during) throws LeaseLostException {
        beatIfDue(c);
        ensureAlive(during);
    }

    /** Throws when the session was found gone. */
    public void ensureAlive(String during) throws LeaseLostException {
        SQLException e = lost;
        if (e != null) {
            throw new LeaseLostException("the lane's session ended " + during + ": " + lostReason(), e);
        }
    }

    /**
     * On the lane's thread, between transactions: a heartbeat if a third of the lease passed without a statement.
     * Returns false when the session is gone.
     */
    public boolean beatIfDue(Connection c) {
        if (lost != null) {
            return false;
        }
        if (System.nanoTime() - lastTalkNanos < beatNanos) {
            return true;
        }
        lock.lock();
        try {
            return beat(c);
        } finally {
            lock.unlock();
        }
    }

    /** Runs {@code work} on the lane's thread while the keeper keeps {@code c}'s session alive (null: no session). */
    public <T, E extends Exception> T away(Connection c, Away<T, E> work) throws E {
        if (c == null) {
            return work.call();
        }
        leave(c, callBudgetNanos);
        try {
            return work.call();
        } finally {
            takeBack();
        }
    }

    /** {@link #away} for work without a result. */
    public void awayRun(Connection c, Runnable work) {
        away(c, () -> {
            work.run();
            return null;
        });
    }

    /**
     * Waits up to {@code maxNanos} for {@code f}, keeping {@code c}'s session alive (null: no session). Throws
     * {@link LeaseLostException} as soon as the session is found gone — also when {@code f} completed meanwhile: its
     * outcome can no longer be recorded on this lease.
     */
    public <T> T await(Connection c, CompletableFuture<T> f, long maxNanos)
            throws InterruptedException, ExecutionException, TimeoutException, LeaseLostException {
        if (c == null) {
            return f.get(maxNanos, TimeUnit.NANOSECONDS);
        }
        ensureAlive("before the wait");
        long deadline = System.nanoTime() + maxNanos;
        leave(c, maxNanos + beatNanos);
        try {
            while (true) {
                // in slices: a loss the keeper found ends the wait within a slice
                long left = deadline - System.nanoTime();
                try {
                    f.get(Math.max(1, Math.min(left, beatNanos / 4)), TimeUnit.NANOSECONDS);
                    break;
                } catch (ExecutionException e) {
                    break; // f failed: its failure is reported below, unless the session is gone as well
                } catch (TimeoutException e) {
                    ensureAlive("while the lane waited for the transport");
                    if (left <= beatNanos / 4) {
                        throw e;
                    }
                }
            }
        } finally {
            takeBack();
        }
        ensureAlive("while the lane waited for the transport");
        return f.get(); // done
    }

    private void leave(Connection c, long budgetNanos) {
        lock.lock();
        try {
            held = c;
            heldUntil = System.nanoTime() + budgetNanos;
            if (thread == null && !closed) {
                thread = new Thread(this::keep, name + "-" + laneId + "-lease");
                thread.setDaemon(true);
                thread.start();
            }
        } finally {
            lock.unlock();
        }
    }

    private void takeBack() {
        lock.lock(); // waits for a heartbeat in progress
        try {
            held = null;
        } finally {
            lock.unlock();
        }
    }

    /** The keeper's thread: a heartbeat on the held connection whenever a third of the lease passed in silence. */
    private void keep() {
        lock.lock();
        try {
            while (!closed) {
                long wait = beatNanos / 4; // no connection held: look again soon, a region may begin any time
                if (held != null && lost == null) {
                    long now = System.nanoTime();
                    if (now - heldUntil >= 0) {
                        lost = new SQLException("a call out of the lane (the transport's send, or a listener "
                                + "callback) took longer than relay.sendTimeout; the lane stopped keeping its session "
                                + "alive so that another instance can take the lane over");
                        log.warn("{} {}: {}", name, laneId, lost.getMessage());
                        continue;
                    }
                    wait = Math.min(lastTalkNanos + beatNanos - now, heldUntil - now);
                    if (wait <= 0) {
                        beat(held);
                        continue;
                    }
                }
                closing.awaitNanos(wait);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } finally {
            lock.unlock();
        }
    }

    /** The heartbeat, under the lock. */
    private boolean beat(Connection c) {
        try (Statement st = c.createStatement()) {
            st.execute(LaneStatements.HEARTBEAT);
            c.commit();
            talked();
            return true;
        } catch (SQLException e) {
            lost = e;
            return false;
        }
    }

    @Override
    public void close() {
        lock.lock();
        try {
            closed = true;
            held = null;
            closing.signalAll();
        } finally {
            lock.unlock();
        }
    }
}
