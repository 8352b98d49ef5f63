package io.txoutbox.micrometer;

import io.txoutbox.InvalidConfigurationException;
import java.time.Duration;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The reading thread the table gauges share: one daemon thread ({@code txoutbox-metrics-<n>}) that reads every
 * {@code interval}, never dies, and on a failed reading marks the gauges unreadable and logs once per streak.
 */
final class Sampler implements AutoCloseable {

    /** One reading of a table; updates the gauges' values. */
    @FunctionalInterface
    interface Reading {
        void read() throws Exception;
    }

    private static final Logger log = LoggerFactory.getLogger(Sampler.class);
    private static final AtomicInteger THREADS = new AtomicInteger();

    private final String binder;
    private final String what;
    private final Duration interval;
    private final Reading reading;
    private final Runnable unreadable;
    private final AtomicBoolean started = new AtomicBoolean();
    private final AtomicBoolean closed = new AtomicBoolean();
    private volatile boolean failing;
    private ScheduledExecutorService executor;

    /**
     * @param binder     the binder, for errors, e.g. {@code OutboxMeterBinder for public.outbox_event (64 shards)}
     * @param what       what is read, for logs, e.g. {@code public.outbox_event (64 shards)}
     * @param unreadable sets every gauge to NaN
     */
    Sampler(String binder, String what, Duration interval, Reading reading, Runnable unreadable) {
        this.binder = binder;
        this.what = what;
        this.interval = requireInterval(interval);
        this.reading = reading;
        this.unreadable = unreadable;
    }

    static Duration requireInterval(Duration interval) {
        if (interval == null || interval.compareTo(Duration.ofSeconds(1)) < 0) {
            throw new InvalidConfigurationException("metrics.interval must be >= 1 s, was " + interval
                    + ": the gauges read the table, which must not happen per scrape or per batch");
        }
        return interval;
    }

    /** Checks that the binder can be bound now (not closed, not bound before); call before registering gauges. */
    void claim() {
        if (closed.get()) {
            throw new IllegalStateException(binder + " is closed; make a new one");
        }
        if (!started.compareAndSet(false, true)) {
            throw new IllegalStateException(binder + " is bound already: make one per registry (or use a "
                    + "CompositeMeterRegistry)");
        }
    }

    /** Starts reading now and every {@code interval} after. */
    synchronized void start() {
        if (closed.get()) {
            return;
        }
        executor = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "txoutbox-metrics-" + THREADS.incrementAndGet());
            t.setDaemon(true);
            return t;
        });
        executor.scheduleWithFixedDelay(this::sample, 0, interval.toMillis(), TimeUnit.MILLISECONDS);
    }

    /** Reads once; never throws. */
    void sample() {
        try {
            reading.read();
            if (failing) {
                failing = false;
                log.info("txoutbox-metrics {}: reading the backlog works again", what);
            }
        } catch (Throwable t) { // the sampler never dies
            unreadable.run();
            if (!failing) {
                failing = true;
                log.warn("txoutbox-metrics {}: cannot read the backlog, gauges read NaN until it works: {}", what,
                        t.toString());
            }
        }
    }

    /** Stops reading; the gauges keep their last values. Idempotent. */
    @Override
    public synchronized void close() {
        if (!closed.compareAndSet(false, true) || executor == null) {
            return;
        }
        executor.shutdownNow();
        try {
            if (!executor.awaitTermination(5, TimeUnit.SECONDS)) {
                log.warn("txoutbox-metrics {}: sampler did not stop within 5 s", what);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
