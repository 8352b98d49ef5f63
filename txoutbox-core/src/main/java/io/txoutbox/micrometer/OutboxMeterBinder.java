package io.txoutbox.micrometer;

import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.binder.MeterBinder;
import io.txoutbox.InvalidConfigurationException;
import io.txoutbox.OutboxSchema;
import io.txoutbox.OutboxStatus;
import java.time.Duration;
import java.util.HashSet;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Gauges of an outbox table, read by one sampling thread every {@code interval} (default 5 s) — never per batch,
 * never on the scraping thread:
 *
 * <pre>{@code
 * OutboxMeterBinder gauges = new OutboxMeterBinder(dataSource, schema);
 * gauges.bindTo(registry);      // starts sampling; close() stops it
 * }</pre>
 *
 * <table>
 *   <caption>gauges, all tagged {@code outbox} ({@code schema.table})</caption>
 *   <tr><td>{@value #PENDING}</td><td>+ {@code topic}</td><td>pending events</td></tr>
 *   <tr><td>{@value #EVENT_AGE}</td><td>+ {@code topic}, seconds</td><td>age of the oldest pending event (from its
 *       {@code created_at}); 0 when none is pending</td></tr>
 *   <tr><td>{@value #PARKED_KEYS}</td><td></td><td>keys whose head event is parked</td></tr>
 *   <tr><td>{@value #DEAD_EVENTS}</td><td></td><td>dead events</td></tr>
 * </table>
 *
 * A topic's gauges appear once it had a pending event and stay (at 0) after. While the table cannot be read, every
 * gauge reads NaN, so a dashboard shows a gap rather than stale values, and the failure is logged once per streak.
 */
public final class OutboxMeterBinder implements MeterBinder, AutoCloseable {

    public static final String PENDING = "txoutbox.outbox.pending";
    public static final String EVENT_AGE = "txoutbox.outbox.event.age";
    public static final String PARKED_KEYS = "txoutbox.outbox.parked.keys";
    public static final String DEAD_EVENTS = "txoutbox.outbox.dead.events";
    public static final Duration DEFAULT_INTERVAL = Duration.ofSeconds(5);

    private static final Logger log = LoggerFactory.getLogger(OutboxMeterBinder.class);
    private static final AtomicInteger THREADS = new AtomicInteger();

    private final DataSource dataSource;
    private final OutboxSchema schema;
    private final Duration interval;
    private final Tags tags;
    private final Map<String, TopicValues> topics = new ConcurrentHashMap<>();
    private final AtomicBoolean bound = new AtomicBoolean();
    private final AtomicBoolean closed = new AtomicBoolean();
    private volatile MeterRegistry registry;
    private volatile double parked = Double.NaN;
    private volatile double dead = Double.NaN;
    private volatile boolean failing;
    private ScheduledExecutorService sampler;

    private static final class TopicValues {
        volatile double pending = Double.NaN;
        volatile double ageSeconds = Double.NaN;
    }

    public OutboxMeterBinder(DataSource dataSource, OutboxSchema schema) {
        this(dataSource, schema, DEFAULT_INTERVAL);
    }

    /** {@code interval}: how often the table is read (at least 1 s; each reading is two short statements). */
    public OutboxMeterBinder(DataSource dataSource, OutboxSchema schema, Duration interval) {
        this.dataSource = Objects.requireNonNull(dataSource, "metrics.dataSource must not be null");
        this.schema = Objects.requireNonNull(schema, "metrics.schema must not be null");
        if (interval == null || interval.compareTo(Duration.ofSeconds(1)) < 0) {
            throw new InvalidConfigurationException("metrics.interval must be >= 1 s, was " + interval
                    + ": the gauges read the table, which must not happen per scrape or per batch");
        }
        this.interval = interval;
        this.tags = Tags.of("outbox", schema.schema() + "." + schema.outboxTable());
    }

    @Override
    public void bindTo(MeterRegistry registry) {
        if (closed.get()) {
            throw new IllegalStateException("OutboxMeterBinder for " + schema + " is closed; make a new one");
        }
        if (!bound.compareAndSet(false, true)) {
            throw new IllegalStateException("OutboxMeterBinder for " + schema + " is bound already: make one per "
                    + "registry (or use a CompositeMeterRegistry)");
        }
        this.registry = registry;
        Gauge.builder(PARKED_KEYS, this, b -> b.parked).tags(tags).description("Keys whose head event is parked")
                .register(registry);
        Gauge.builder(DEAD_EVENTS, this, b -> b.dead).tags(tags).description("Dead events").register(registry);
        sampler = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "txoutbox-metrics-" + THREADS.incrementAndGet());
            t.setDaemon(true);
            return t;
        });
        sampler.scheduleWithFixedDelay(this::sample, 0, interval.toMillis(), TimeUnit.MILLISECONDS);
    }

    /** Reads the backlog once and updates the gauges; never throws. */
    void sample() {
        try {
            OutboxStatus.Backlog backlog = OutboxStatus.backlog(dataSource, schema);
            Set<String> seen = new HashSet<>();
            for (OutboxStatus.TopicStatus t : backlog.topics()) {
                TopicValues v = topic(t.topic());
                v.pending = t.pending();
                v.ageSeconds = t.oldestPendingAge().toNanos() / 1e9;
                seen.add(t.topic());
            }
            topics.forEach((name, v) -> {
                if (!seen.contains(name)) {
                    v.pending = 0;
                    v.ageSeconds = 0;
                }
            });
            parked = backlog.parkedKeys();
            dead = backlog.deadEvents();
            if (failing) {
                failing = false;
                log.info("txoutbox-metrics {}: reading the backlog works again", schema);
            }
        } catch (Throwable t) { // the sampler never dies
            parked = Double.NaN;
            dead = Double.NaN;
            topics.values().forEach(v -> {
                v.pending = Double.NaN;
                v.ageSeconds = Double.NaN;
            });
            if (!failing) {
                failing = true;
                log.warn("txoutbox-metrics {}: cannot read the backlog, gauges read NaN until it works: {}", schema,
                        t.toString());
            }
        }
    }

    private TopicValues topic(String name) {
        TopicValues v = topics.get(name);
        if (v != null) {
            return v;
        }
        return topics.computeIfAbsent(name, n -> {
            TopicValues created = new TopicValues();
            Tags t = tags.and("topic", n);
            Gauge.builder(PENDING, created, x -> x.pending).tags(t).description("Pending events")
                    .register(registry);
            Gauge.builder(EVENT_AGE, created, x -> x.ageSeconds).tags(t).baseUnit("seconds")
                    .description("Age of the oldest pending event, from its created_at").register(registry);
            return created;
        });
    }

    /** Stops sampling; the gauges keep their last values. Idempotent. */
    @Override
    public void close() {
        if (!closed.compareAndSet(false, true) || sampler == null) {
            return;
        }
        sampler.shutdownNow();
        try {
            if (!sampler.awaitTermination(5, TimeUnit.SECONDS)) {
                log.warn("txoutbox-metrics {}: sampler did not stop within 5 s", schema);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
