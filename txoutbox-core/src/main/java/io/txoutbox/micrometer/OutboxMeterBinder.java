package io.txoutbox.micrometer;

import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.binder.MeterBinder;
import io.txoutbox.OutboxSchema;
import io.txoutbox.OutboxStatus;
import java.time.Duration;
import java.util.HashSet;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import javax.sql.DataSource;

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
 *   <tr><td>{@value #SHARD_PENDING}</td><td>+ {@code shard}, only when asked</td><td>pending events of the
 *       shard</td></tr>
 *   <tr><td>{@value #SHARD_EVENT_AGE}</td><td>+ {@code shard}, seconds, only when asked</td><td>age of the shard's
 *       head ({@link OutboxStatus.ShardStatus}); 0 when none is pending</td></tr>
 * </table>
 *
 * A topic's (or shard's) gauges appear once it had a pending event and stay (at 0) after. While the table cannot be
 * read, every gauge reads NaN, so a dashboard shows a gap rather than stale values, and the failure is logged once
 * per streak. The shard gauges are off by default: they are up to two series per shard and one more statement per
 * reading; turn them on to find a shard that lags (a slow lane, a relay instance that owns too many).
 */
public final class OutboxMeterBinder implements MeterBinder, AutoCloseable {

    public static final String PENDING = "txoutbox.outbox.pending";
    public static final String EVENT_AGE = "txoutbox.outbox.event.age";
    public static final String PARKED_KEYS = "txoutbox.outbox.parked.keys";
    public static final String DEAD_EVENTS = "txoutbox.outbox.dead.events";
    public static final String SHARD_PENDING = "txoutbox.outbox.shard.pending";
    public static final String SHARD_EVENT_AGE = "txoutbox.outbox.shard.event.age";
    public static final Duration DEFAULT_INTERVAL = Duration.ofSeconds(5);

    private final DataSource dataSource;
    private final OutboxSchema schema;
    private final boolean shardGauges;
    private final Tags tags;
    private final Sampler sampler;
    private final Map<String, Values> topics = new ConcurrentHashMap<>();
    private final Map<Integer, Values> shards = new ConcurrentHashMap<>();
    private volatile MeterRegistry registry;
    private volatile double parked = Double.NaN;
    private volatile double dead = Double.NaN;

    /** The pending count and event age of one topic or shard. */
    private static final class Values {
        volatile double pending = Double.NaN;
        volatile double ageSeconds = Double.NaN;
    }

    public OutboxMeterBinder(DataSource dataSource, OutboxSchema schema) {
        this(dataSource, schema, DEFAULT_INTERVAL);
    }

    /** {@code interval}: how often the table is read (at least 1 s; each reading is two short statements). */
    public OutboxMeterBinder(DataSource dataSource, OutboxSchema schema, Duration interval) {
        this(dataSource, schema, interval, false);
    }

    /**
     * {@code shardGauges}: also {@value #SHARD_PENDING} and {@value #SHARD_EVENT_AGE} per shard (a third statement
     * per reading, through the pending index alone).
     */
    public OutboxMeterBinder(DataSource dataSource, OutboxSchema schema, Duration interval, boolean shardGauges) {
        this.dataSource = Objects.requireNonNull(dataSource, "metrics.dataSource must not be null");
        this.schema = Objects.requireNonNull(schema, "metrics.schema must not be null");
        this.shardGauges = shardGauges;
        this.tags = Tags.of("outbox", schema.schema() + "." + schema.outboxTable());
        this.sampler = new Sampler("OutboxMeterBinder for " + schema, schema.toString(), interval, this::read,
                this::unreadable);
    }

    @Override
    public void bindTo(MeterRegistry registry) {
        sampler.claim();
        this.registry = registry;
        Gauge.builder(PARKED_KEYS, this, b -> b.parked).tags(tags).description("Keys whose head event is parked")
                .register(registry);
        Gauge.builder(DEAD_EVENTS, this, b -> b.dead).tags(tags).description("Dead events").register(registry);
        sampler.start();
    }

    /** Reads the backlog once and updates the gauges; never throws. */
    void sample() {
        sampler.sample();
    }

    private void read() {
        OutboxStatus.Backlog backlog = OutboxStatus.backlog(dataSource, schema);
        Set<String> seen = new HashSet<>();
        for (OutboxStatus.TopicStatus t : backlog.topics()) {
            set(topic(t.topic()), t.pending(), t.oldestPendingAge());
            seen.add(t.topic());
        }
        topics.forEach((name, v) -> {
            if (!seen.contains(name)) {
                set(v, 0, Duration.ZERO);
            }
        });
        parked = backlog.parkedKeys();
        dead = backlog.deadEvents();
        if (shardGauges) {
            Set<Integer> pendingShards = new HashSet<>();
            for (OutboxStatus.ShardStatus s : OutboxStatus.shards(dataSource, schema)) {
                set(shard(s.shard()), s.pending(), s.oldestPendingAge());
                pendingShards.add(s.shard());
            }
            shards.forEach((shard, v) -> {
                if (!pendingShards.contains(shard)) {
                    set(v, 0, Duration.ZERO);
                }
            });
        }
    }

    private void unreadable() {
        parked = Double.NaN;
        dead = Double.NaN;
        topics.values().forEach(v -> set(v, Double.NaN, null));
        shards.values().forEach(v -> set(v, Double.NaN, null));
    }

    private static void set(Values v, double pending, Duration age) {
        v.pending = pending;
        v.ageSeconds = age == null ? Double.NaN : age.toNanos() / 1e9;
    }

    private Values topic(String name) {
        Values v = topics.get(name);
        if (v != null) {
            return v;
        }
        return topics.computeIfAbsent(name, n -> register(PENDING, EVENT_AGE, tags.and("topic", n),
                "Pending events", "Age of the oldest pending event, from its created_at"));
    }

    private Values shard(int shard) {
        Values v = shards.get(shard);
        if (v != null) {
            return v;
        }
        return shards.computeIfAbsent(shard, n -> register(SHARD_PENDING, SHARD_EVENT_AGE,
                tags.and("shard", Integer.toString(n)), "Pending events of the shard",
                "Age of the shard's first pending event in claim order, from its created_at"));
    }

    private Values register(String pendingName, String ageName, Tags t, String pendingText, String ageText) {
        Values created = new Values();
        Gauge.builder(pendingName, created, x -> x.pending).tags(t).description(pendingText).register(registry);
        Gauge.builder(ageName, created, x -> x.ageSeconds).tags(t).baseUnit("seconds").description(ageText)
                .register(registry);
        return created;
    }

    /** Stops sampling; the gauges keep their last values. Idempotent. */
    @Override
    public void close() {
        sampler.close();
    }
}
