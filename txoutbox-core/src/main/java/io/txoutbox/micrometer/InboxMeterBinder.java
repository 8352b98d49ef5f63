package io.txoutbox.micrometer;

import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.binder.MeterBinder;
import io.txoutbox.InboxAdmin;
import io.txoutbox.OutboxSchema;
import java.time.Duration;
import java.util.HashSet;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import javax.sql.DataSource;

/**
 * Gauges of the inbox ({@code inbox_event} of a schema), per consumer, read by one sampling thread every
 * {@code interval} (default 5 s) with {@link InboxAdmin#backlog()} — never per event, never on the scraping thread:
 *
 * <pre>{@code
 * InboxMeterBinder gauges = new InboxMeterBinder(dataSource, schema);
 * gauges.bindTo(registry);      // starts sampling; close() stops it
 * }</pre>
 *
 * <table>
 *   <caption>gauges, all tagged {@code inbox} ({@code schema.inbox_event}) and {@code consumer}</caption>
 *   <tr><td>{@value #PENDING}</td><td></td><td>pending events (including those behind a parked key)</td></tr>
 *   <tr><td>{@value #EVENT_AGE}</td><td>seconds</td><td>age of the oldest pending event (from its
 *       {@code received_at}); 0 when none is pending</td></tr>
 *   <tr><td>{@value #PARKED_KEYS}</td><td></td><td>keys whose head event is parked</td></tr>
 *   <tr><td>{@value #DEAD_EVENTS}</td><td></td><td>dead events</td></tr>
 * </table>
 *
 * Every consumer of the schema is covered, not only those of this process. A consumer's gauges appear once it had a
 * pending, parked or dead event and stay (at 0) after. While the table cannot be read, every gauge reads NaN, and the
 * failure is logged once per streak. The dead count needs schema V5 (its index of parked and dead rows).
 */
public final class InboxMeterBinder implements MeterBinder, AutoCloseable {

    public static final String PENDING = "txoutbox.inbox.pending";
    public static final String EVENT_AGE = "txoutbox.inbox.event.age";
    public static final String PARKED_KEYS = "txoutbox.inbox.parked.keys";
    public static final String DEAD_EVENTS = "txoutbox.inbox.dead.events";
    public static final Duration DEFAULT_INTERVAL = OutboxMeterBinder.DEFAULT_INTERVAL;

    private final InboxAdmin admin;
    private final Tags tags;
    private final Sampler sampler;
    private final Map<String, Values> consumers = new ConcurrentHashMap<>();
    private volatile MeterRegistry registry;

    /** One consumer's gauge values. */
    private static final class Values {
        volatile double pending = Double.NaN;
        volatile double ageSeconds = Double.NaN;
        volatile double parked = Double.NaN;
        volatile double dead = Double.NaN;

        void set(double pending, double ageSeconds, double parked, double dead) {
            this.pending = pending;
            this.ageSeconds = ageSeconds;
            this.parked = parked;
            this.dead = dead;
        }
    }

    public InboxMeterBinder(DataSource dataSource, OutboxSchema schema) {
        this(dataSource, schema, DEFAULT_INTERVAL);
    }

    /** {@code interval}: how often the table is read (at least 1 s; each reading is two short statements). */
    public InboxMeterBinder(DataSource dataSource, OutboxSchema schema, Duration interval) {
        Objects.requireNonNull(dataSource, "metrics.dataSource must not be null");
        Objects.requireNonNull(schema, "metrics.schema must not be null");
        this.admin = InboxAdmin.create(dataSource, schema);
        String inbox = schema.schema() + ".inbox_event";
        this.tags = Tags.of("inbox", inbox);
        this.sampler = new Sampler("InboxMeterBinder for " + inbox, inbox, interval, this::read,
                () -> consumers.values().forEach(v -> v.set(Double.NaN, Double.NaN, Double.NaN, Double.NaN)));
    }

    @Override
    public void bindTo(MeterRegistry registry) {
        sampler.claim();
        this.registry = registry;
        sampler.start();
    }

    private void read() {
        Set<String> seen = new HashSet<>();
        for (InboxAdmin.ConsumerBacklog b : admin.backlog()) {
            consumer(b.consumer()).set(b.pending(), b.oldestPendingAge().toNanos() / 1e9, b.parkedKeys(),
                    b.deadEvents());
            seen.add(b.consumer());
        }
        consumers.forEach((name, v) -> {
            if (!seen.contains(name)) {
                v.set(0, 0, 0, 0);
            }
        });
    }

    private Values consumer(String name) {
        Values v = consumers.get(name);
        if (v != null) {
            return v;
        }
        return consumers.computeIfAbsent(name, n -> {
            Values created = new Values();
            Tags t = tags.and("consumer", n);
            Gauge.builder(PENDING, created, x -> x.pending).tags(t).description("Pending inbox events")
                    .register(registry);
            Gauge.builder(EVENT_AGE, created, x -> x.ageSeconds).tags(t).baseUnit("seconds")
                    .description("Age of the oldest pending inbox event, from its received_at").register(registry);
            Gauge.builder(PARKED_KEYS, created, x -> x.parked).tags(t)
                    .description("Inbox keys whose head event is parked").register(registry);
            Gauge.builder(DEAD_EVENTS, created, x -> x.dead).tags(t).description("Dead inbox events")
                    .register(registry);
            return created;
        });
    }

    /** Stops sampling; the gauges keep their last values. Idempotent. */
    @Override
    public void close() {
        sampler.close();
    }
}
