package io.txoutbox.testing.process;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Kills and restarts something (a relay process, the broker) at random moments, so a fault test explores crash
 * points nobody thought of, while staying reproducible (seeded) and bounded (in kills and in time). It alternates:
 * wait a random up-time, kill, wait a random down-time, restart. On {@link #close()} a killed target is restarted,
 * so the system under test ends up running.
 *
 * <pre>{@code
 * try (RandomKiller killer = RandomKiller.builder().seed(42).kill(relay::kill).restart(relay::restart)
 *         .upTime(Duration.ofMillis(200), Duration.ofSeconds(2)).maxKills(5).maxDuration(Duration.ofSeconds(30))
 *         .start()) {
 *     killer.awaitDone(Duration.ofSeconds(40));
 * }
 * }</pre>
 */
public final class RandomKiller implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(RandomKiller.class);

    /** What happened when. */
    public record Event(Instant at, Kind kind) {
    }

    /** Kinds of {@link Event}. */
    public enum Kind { KILL, RESTART }

    private final Builder options;
    private final Random random;
    private final Thread thread;
    private final CountDownLatch stop = new CountDownLatch(1);
    private final CountDownLatch done = new CountDownLatch(1);
    private final AtomicBoolean closed = new AtomicBoolean();
    private final List<Event> events = new ArrayList<>();
    private volatile Throwable failure;
    private boolean down;

    private RandomKiller(Builder options) {
        this.options = options;
        this.random = new Random(options.seed);
        this.thread = new Thread(this::run, "txoutbox-testing-random-killer-" + options.name);
        this.thread.setDaemon(true);
    }

    public static Builder builder() {
        return new Builder();
    }

    /** Number of kills done so far. */
    public int kills() {
        return (int) events().stream().filter(e -> e.kind() == Kind.KILL).count();
    }

    /** Number of restarts done so far. */
    public int restarts() {
        return (int) events().stream().filter(e -> e.kind() == Kind.RESTART).count();
    }

    /** The kills and restarts so far, in order. */
    public List<Event> events() {
        synchronized (events) {
            return List.copyOf(events);
        }
    }

    /** True once the schedule has ended (bounds reached, closed, or a kill/restart failed). */
    public boolean isDone() {
        return done.getCount() == 0;
    }

    /**
     * Waits until the schedule has ended, with the target running again. Fails on timeout and rethrows (wrapped) a
     * failure of the kill or restart action.
     */
    public void awaitDone(Duration timeout) {
        try {
            if (!done.await(timeout.toNanos(), TimeUnit.NANOSECONDS)) {
                throw new IllegalStateException("RandomKiller " + options.name + " not done after " + timeout
                        + " (" + kills() + " kills so far)");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while waiting for RandomKiller " + options.name, e);
        }
        Throwable t = failure;
        if (t != null) {
            throw new IllegalStateException("RandomKiller " + options.name + " failed after " + kills() + " kills", t);
        }
    }

    /** Stops the schedule, restarts the target if it is down, and waits for that. Idempotent. */
    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        stop.countDown();
        boolean interrupted = false;
        try {
            if (thread.isAlive()) {
                thread.join(options.closeTimeout.toMillis());
            }
        } catch (InterruptedException e) {
            interrupted = true;
        }
        if (thread.isAlive()) {
            log.warn("RandomKiller {}: thread still running {} after close", options.name, options.closeTimeout);
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
    }

    private RandomKiller begin() {
        thread.start();
        return this;
    }

    private void run() {
        long deadline = System.nanoTime() + options.maxDuration.toNanos();
        try {
            while (countOf(Kind.KILL) < options.maxKills && System.nanoTime() < deadline) {
                if (pause(between(options.minUp, options.maxUp), deadline)) {
                    break;
                }
                log.info("RandomKiller {}: kill #{}", options.name, countOf(Kind.KILL) + 1);
                options.kill.run();
                down = true;
                record(Kind.KILL);
                // the down-time is served even past the deadline: the target must come back
                if (pause(between(options.minDown, options.maxDown), Long.MAX_VALUE)) {
                    break;
                }
                restart();
            }
        } catch (Throwable t) {
            failure = t;
            log.error("RandomKiller {}: kill/restart failed, stopping", options.name, t);
        } finally {
            try {
                if (down && failure == null) {
                    restart();
                }
            } catch (Throwable t) {
                failure = t;
                log.error("RandomKiller {}: final restart failed", options.name, t);
            }
            done.countDown();
        }
    }

    private void restart() {
        log.info("RandomKiller {}: restart #{}", options.name, countOf(Kind.RESTART) + 1);
        options.restart.run();
        down = false;
        record(Kind.RESTART);
    }

    /** Waits {@code nanos} (cut at the deadline); true if close() asked to stop or the deadline passed. */
    private boolean pause(long nanos, long deadline) throws InterruptedException {
        long until = Math.min(deadline, System.nanoTime() + nanos);
        long wait = until - System.nanoTime();
        if (stop.await(Math.max(0, wait), TimeUnit.NANOSECONDS)) {
            return true;
        }
        return deadline != Long.MAX_VALUE && System.nanoTime() >= deadline;
    }

    private long between(Duration min, Duration max) {
        long lo = min.toNanos();
        long hi = max.toNanos();
        return lo == hi ? lo : lo + (long) (random.nextDouble() * (hi - lo));
    }

    private int countOf(Kind kind) {
        synchronized (events) {
            return (int) events.stream().filter(e -> e.kind() == kind).count();
        }
    }

    private void record(Kind kind) {
        synchronized (events) {
            events.add(new Event(Instant.now(), kind));
        }
    }

    /** Options of a {@link RandomKiller}. */
    public static final class Builder {
        private String name = "target";
        private long seed = 1;
        private Runnable kill;
        private Runnable restart;
        private Duration minUp = Duration.ofMillis(500);
        private Duration maxUp = Duration.ofSeconds(3);
        private Duration minDown = Duration.ZERO;
        private Duration maxDown = Duration.ofMillis(500);
        private int maxKills = 3;
        private Duration maxDuration = Duration.ofSeconds(60);
        private Duration closeTimeout = Duration.ofSeconds(60);

        private Builder() {
        }

        /** Name for logs and the thread. */
        public Builder name(String name) {
            this.name = Objects.requireNonNull(name, "name");
            return this;
        }

        /** Seed of the random delays: the same seed gives the same schedule. */
        public Builder seed(long seed) {
            this.seed = seed;
            return this;
        }

        /** How to kill the target (e.g. {@code process::kill}). Must return once it is dead. */
        public Builder kill(Runnable kill) {
            this.kill = Objects.requireNonNull(kill, "kill");
            return this;
        }

        /** How to bring the target back (e.g. {@code broker::restart}). */
        public Builder restart(Runnable restart) {
            this.restart = Objects.requireNonNull(restart, "restart");
            return this;
        }

        /** Random time the target runs before each kill. */
        public Builder upTime(Duration min, Duration max) {
            checkRange("randomKiller.upTime", min, max);
            this.minUp = min;
            this.maxUp = max;
            return this;
        }

        /** Random time the target stays dead before each restart. */
        public Builder downTime(Duration min, Duration max) {
            checkRange("randomKiller.downTime", min, max);
            this.minDown = min;
            this.maxDown = max;
            return this;
        }

        public Builder maxKills(int maxKills) {
            if (maxKills < 1) {
                throw new IllegalArgumentException("randomKiller.maxKills must be >= 1, was " + maxKills);
            }
            this.maxKills = maxKills;
            return this;
        }

        /** No kill starts after this time from start(). */
        public Builder maxDuration(Duration maxDuration) {
            if (maxDuration.isNegative() || maxDuration.isZero()) {
                throw new IllegalArgumentException("randomKiller.maxDuration must be > 0, was " + maxDuration);
            }
            this.maxDuration = maxDuration;
            return this;
        }

        /** How long close() waits for a running kill/restart. */
        public Builder closeTimeout(Duration closeTimeout) {
            this.closeTimeout = Objects.requireNonNull(closeTimeout, "closeTimeout");
            return this;
        }

        public RandomKiller start() {
            if (kill == null || restart == null) {
                throw new IllegalStateException("randomKiller.kill and randomKiller.restart must be set");
            }
            return new RandomKiller(this).begin();
        }

        private static void checkRange(String property, Duration min, Duration max) {
            if (min.isNegative() || max.compareTo(min) < 0) {
                throw new IllegalArgumentException(property + " must satisfy 0 <= min <= max, was " + min + ".." + max);
            }
        }
    }
}
