package io.txoutbox.bench;

import io.txoutbox.Outbox;
import io.txoutbox.OutboxMessage;
import io.txoutbox.OutboxSchema;
import io.txoutbox.PollingRelay;
import io.txoutbox.internal.progress.ProgressModels;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.record.TimestampType;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * An open-loop steady run: writer threads commit one event per transaction at fixed slots ({@code t0 + i / rate},
 * whether or not earlier ones finished), the relay runs in the same JVM and is nudged by the writers' outbox, and a
 * read_committed consumer takes the broker's append time of every record (topic with
 * {@code message.timestamp.type=LogAppendTime}). Latency of an event = append time − wall-clock time when its
 * writer's {@code commit()} returned.
 */
final class SteadyRun implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(SteadyRun.class);
    private static final Clock CLOCK = Clock.systemUTC();

    private final BenchEnv env;
    private final Events gen;
    private final String topic;
    private final OutboxSchema schema;
    private final double rate;
    private final int slots;
    private final int writers;
    private final long[] commitWallMicros;
    private final long[] commitLagMicros;
    private final long[] appendMillis;
    private final Map<UUID, Integer> slotOfEvent = new ConcurrentHashMap<>();
    private final AtomicLong nextSlot = new AtomicLong();
    private final AtomicLong committed = new AtomicLong();
    private final AtomicLong errors = new AtomicLong();
    private final AtomicLong badTimestamps = new AtomicLong();
    private final List<Thread> threads = new ArrayList<>();
    private PollingRelay relay;
    private CommittedReader reader;
    private volatile long t0;
    private volatile boolean stopping;

    SteadyRun(BenchEnv env, Events gen, String id, double rate, double seconds, int writers) {
        this.env = env;
        this.gen = gen;
        this.topic = "steady-" + id.replace('_', '-');
        this.schema = Backlog.createSchema(env, "bench_" + id);
        this.rate = rate;
        this.slots = (int) Math.ceil(rate * seconds);
        this.writers = writers;
        this.commitWallMicros = new long[slots];
        this.commitLagMicros = new long[slots];
        this.appendMillis = new long[slots];
        Arrays.fill(commitWallMicros, -1);
        Arrays.fill(appendMillis, -1);
        env.createTopic(topic, Map.of("message.timestamp.type", "LogAppendTime"));
    }

    OutboxSchema schema() {
        return schema;
    }

    /**
     * Starts relay, consumer and writers; returns the schedule's start (nanoTime). {@code shardNudge}: the writers wake
     * only the lane of the shard they wrote ({@code Outbox.Builder#nudge(relay)}); else every lane
     * ({@code afterPublish(relay::nudge)}).
     */
    long start(int lanes, int batchSize, java.time.Duration linger, boolean shardNudge) throws Exception {
        relay = PollingRelay.builder().dataSource(env.relayDataSource())
                .transport(KafkaTransports.create(env.bootstrapServers(), ProducerSettings.effective(env.options()),
                        env.options()))
                .schema(schema).name("bench-" + topic).lanes(lanes).batchSize(batchSize).linger(linger).build().start();
        RelayWarmUp.run(env, relay, schema, gen, topic + "-warm");
        Outbox.Builder outbox = Outbox.builder().schema(schema);
        return startWriters((shardNudge ? outbox.nudge(relay) : outbox.afterPublish(relay::nudge)).build());
    }

    /**
     * Starts consumer and writers for relays in other processes, which are woken by {@code NOTIFY}: warms them up
     * first (events through every lane, published in the table).
     */
    long startExternal() throws Exception {
        RelayWarmUp.runExternal(env, schema, gen, topic + "-warm");
        return startWriters(Outbox.builder().schema(schema).notifyOnPublish(true).build());
    }

    private long startWriters(Outbox outbox) throws Exception {
        reader = new CommittedReader(env.bootstrapServers(), topic, this::onRecord).awaitReady();
        t0 = System.nanoTime() + 50_000_000L;
        for (int w = 0; w < writers; w++) {
            Thread t = new Thread(() -> write(outbox), "bench-writer-" + w);
            t.setDaemon(true);
            threads.add(t);
            t.start();
        }
        return t0;
    }

    private void write(Outbox outbox) {
        try (Connection c = env.dataSource().getConnection()) {
            c.setClientInfo("ApplicationName", CpuRules.WRITER_APPLICATION);
            c.setAutoCommit(false);
            while (!stopping) {
                long slot = nextSlot.getAndIncrement();
                if (slot >= slots) {
                    return;
                }
                long due = t0 + (long) (slot * 1e9 / rate);
                for (long wait = due - System.nanoTime(); wait > 0; wait = due - System.nanoTime()) {
                    LockSupport.parkNanos(wait);
                }
                OutboxMessage m = gen.message(topic, slot);
                slotOfEvent.put(m.eventId(), (int) slot);
                try {
                    outbox.publish(c, m);
                    c.commit();
                    Instant now = CLOCK.instant();
                    commitWallMicros[(int) slot] = now.getEpochSecond() * 1_000_000 + now.getNano() / 1_000;
                    commitLagMicros[(int) slot] = (System.nanoTime() - due) / 1_000;
                    committed.incrementAndGet();
                } catch (RuntimeException | SQLException e) {
                    errors.incrementAndGet();
                    log.warn("writer: event {} failed: {}", m.eventId(), e.toString());
                    try {
                        c.rollback();
                    } catch (SQLException ignored) {
                        // next commit will tell
                    }
                }
            }
        } catch (SQLException e) {
            log.error("writer: connection failed", e);
        }
    }

    private void onRecord(ConsumerRecord<byte[], byte[]> r) {
        Header h = r.headers().lastHeader("event_id");
        if (h == null) {
            return;
        }
        Integer slot = slotOfEvent.get(UUID.fromString(new String(h.value(), StandardCharsets.UTF_8)));
        if (slot == null) {
            return;
        }
        if (r.timestampType() != TimestampType.LOG_APPEND_TIME) {
            badTimestamps.incrementAndGet();
        }
        if (appendMillis[slot] < 0) { // the first delivery counts
            appendMillis[slot] = r.timestamp();
        }
    }

    /** Waits for the writers, then for the consumer to have read every committed event (bounded). */
    void finish(Duration deliveryTimeout) throws InterruptedException {
        for (Thread t : threads) {
            t.join();
        }
        long deadline = System.nanoTime() + deliveryTimeout.toNanos();
        while (reader.count() < committed.get() && System.nanoTime() < deadline) {
            Thread.sleep(20);
        }
    }

    long committed() {
        return committed.get();
    }

    long errors() {
        return errors.get();
    }

    /** Seconds from the schedule's start to the last commit (just after it). */
    double lastCommit() {
        double last = 0;
        for (int s = 0; s < slots; s++) {
            if (commitWallMicros[s] >= 0) {
                last = Math.max(last, s / rate + commitLagMicros[s] / 1e6);
            }
        }
        return last + 1e-6;
    }

    /** Seconds since the schedule's start. */
    double elapsed() {
        return (System.nanoTime() - t0) / 1e9;
    }

    /** Sleeps until {@code seconds} after the schedule's start. */
    void awaitElapsed(double seconds) throws InterruptedException {
        long until = t0 + (long) (seconds * 1e9);
        for (long wait = until - System.nanoTime(); wait > 0; wait = until - System.nanoTime()) {
            Thread.sleep(Math.max(1, Math.min(wait / 1_000_000, 100)));
        }
    }

    /**
     * Latencies of the events whose writing transaction committed in [from, to) seconds after the schedule's start
     * (by commit time, not by due time: a writer pool that falls behind commits its events later than due).
     */
    Window window(double from, double to) {
        long[] lat = new long[slots];
        long[] lag = new long[slots];
        int n = 0;
        int committedIn = 0;
        int undelivered = 0;
        for (int s = 0; s < slots; s++) {
            if (commitWallMicros[s] < 0) {
                continue;
            }
            double committedAt = s / rate + commitLagMicros[s] / 1e6;
            if (committedAt < from || committedAt >= to) {
                continue;
            }
            committedIn++;
            if (appendMillis[s] < 0) {
                undelivered++;
                continue;
            }
            lat[n] = appendMillis[s] * 1000 - commitWallMicros[s];
            lag[n] = commitLagMicros[s];
            n++;
        }
        return new Window(to - from, committedIn, undelivered, Stats.sorted(lat, n), Stats.sorted(lag, n));
    }

    /**
     * One time window's figures; latencies in microseconds; {@code commitLag} = commit return − due time (how far
     * the writers fell behind the open-loop schedule).
     */
    record Window(double seconds, int committed, int undelivered, long[] latency, long[] commitLag) {
        double achievedRate() {
            return committed / seconds;
        }

        long p(double q) {
            return Stats.percentile(latency, q);
        }

        long max() {
            return latency.length == 0 ? Long.MIN_VALUE : latency[latency.length - 1];
        }

        long lagP(double q) {
            return Stats.percentile(commitLag, q);
        }
    }

    /**
     * EXPLAIN ANALYZE of a claim like the row-state relay's (lane 0's shards, pending by the table's model): how long
     * the claim scan takes right now.
     */
    String claimProbe(int lanes, int batchSize) {
        StringBuilder shards = new StringBuilder();
        for (int s = 0; s < schema.shards(); s += lanes) {
            shards.append(shards.length() == 0 ? "" : ",").append(s);
        }
        // pending by the table's model: under the cursor model delivered rows stay PENDING, below the cursors
        String sql = "EXPLAIN (ANALYZE, BUFFERS, FORMAT TEXT) SELECT o.id, o.payload::text FROM "
                + schema.qualifiedOutboxTable() + " o WHERE " + ProgressModels.of(schema).pending("o")
                + " AND o.shard = ANY('{" + shards + "}'::int[])"
                + " AND (o.next_attempt_at IS NULL OR o.next_attempt_at <= now()) ORDER BY o.id LIMIT " + batchSize;
        String time = "?";
        String buffers = "";
        try (Connection c = env.dataSource().getConnection(); Statement st = c.createStatement();
             ResultSet rs = st.executeQuery(sql)) {
            while (rs.next()) {
                String line = rs.getString(1).trim();
                if (line.startsWith("Execution Time")) {
                    time = line.substring(line.indexOf(':') + 1).trim();
                } else if (buffers.isEmpty() && line.startsWith("Buffers")) {
                    buffers = line.substring(line.indexOf(':') + 1).trim();
                }
            }
        } catch (SQLException e) {
            return "probe failed: " + e.getMessage();
        }
        long dead = env.queryLong("SELECT coalesce(n_dead_tup, 0) FROM pg_stat_user_tables WHERE schemaname = '"
                + schema.schema() + "' AND relname = '" + schema.outboxTable() + "'");
        return "claim " + time + " (" + buffers + "), dead tuples " + dead;
    }

    long badTimestamps() {
        return badTimestamps.get();
    }

    PollingRelay relay() {
        return relay;
    }

    @Override
    public void close() throws InterruptedException {
        stopping = true;
        for (Thread t : threads) {
            t.join(10_000);
        }
        if (relay != null) {
            relay.close();
        }
        if (reader != null) {
            reader.close();
        }
        Backlog.dropSchema(env, schema);
        env.deleteTopic(topic);
        env.deleteTopic(topic + "-warm");
    }
}
