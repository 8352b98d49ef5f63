package io.txoutbox.kafka.internal;

import io.txoutbox.spi.PartitionUnavailableException;
import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.config.ConfigResource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The partitions of one lane that failed retriably (no leader, not enough in-sync replicas, delivery timeout) in a
 * batch in which other partitions accepted records. Their records are not put into later batches — the lane answers
 * them at once {@code UNAVAILABLE} with a {@link PartitionUnavailableException}, and the later records of their keys
 * {@code COLLATERAL} — so healthy partitions never wait a delivery timeout for them.
 *
 * <p>A partition leaves quarantine when a check on this class's own thread (every {@link #CHECK_INTERVAL}; the lane
 * never waits for it) finds it healthy in the broker's metadata: a leader, and at least
 * {@code min(min.insync.replicas, replicas)} in-sync replicas. The next batch then sends its keys again, after their
 * backoff. A failure the metadata cannot show (a leader this process cannot reach, a failing disk) makes the
 * partition come back after the check passes; each return within {@link #STRIKE_MEMORY} doubles the least time it
 * stays (from {@link #MIN_HOLD} up to {@link #MAX_HOLD}), so such a partition costs the lane one delivery timeout at
 * most every {@link #MAX_HOLD}. When the metadata cannot be read (no Describe/DescribeConfigs on the topic), a
 * partition is let out after its least time, as a trial.
 *
 * <p>Order: while a partition is quarantined none of its records is sent, and the relay holds each of its keys at
 * the key's first unsent event, so nothing of a key can overtake an earlier event.
 */
final class PartitionQuarantine implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(PartitionQuarantine.class);

    static final Duration CHECK_INTERVAL = Duration.ofMillis(500);
    static final Duration MIN_HOLD = Duration.ofSeconds(1);
    static final Duration MAX_HOLD = Duration.ofSeconds(60);
    static final Duration STRIKE_MEMORY = Duration.ofMinutes(10);

    private final String lane;
    private final Map<String, Object> adminProperties;
    private final long timeoutMs;
    private final Map<TopicPartition, Sick> sick = new ConcurrentHashMap<>();
    /** Partitions let out recently: how often they came back, and when they were let out (nanoTime). */
    private final Map<TopicPartition, long[]> strikes = new ConcurrentHashMap<>();
    private ScheduledExecutorService checker;
    private Admin admin;
    private volatile boolean closed;

    private record Sick(Instant since, long sinceNanos, long holdNanos, String error) {
    }

    PartitionQuarantine(String lane, Map<String, Object> adminProperties, long timeoutMs) {
        this.lane = lane;
        this.adminProperties = adminProperties;
        this.timeoutMs = timeoutMs;
    }

    boolean isEmpty() {
        return sick.isEmpty();
    }

    /** True when some partition of the topic is quarantined (the lane then places that topic's records itself). */
    boolean hasTopic(String topic) {
        if (sick.isEmpty()) {
            return false;
        }
        for (TopicPartition tp : sick.keySet()) {
            if (tp.topic().equals(topic)) {
                return true;
            }
        }
        return false;
    }

    boolean contains(String topic, int partition) {
        return !sick.isEmpty() && sick.containsKey(new TopicPartition(topic, partition));
    }

    /** The cause for a record of a quarantined partition, or null when the partition is not quarantined. */
    PartitionUnavailableException causeFor(String topic, int partition) {
        Sick s = sick.get(new TopicPartition(topic, partition));
        if (s == null) {
            return null;
        }
        return new PartitionUnavailableException(topic + "-" + partition, "partition " + topic + "-" + partition
                + " unavailable since " + s.since + ": " + s.error + "; its keys wait until the broker's metadata "
                + "shows it healthy (checked every " + CHECK_INTERVAL.toMillis() + " ms), the other partitions go on",
                null);
    }

    /** The partition failed retriably while others of the batch were accepted: quarantine it. */
    PartitionUnavailableException add(String topic, int partition, Throwable error) {
        TopicPartition tp = new TopicPartition(topic, partition);
        String text = error == null ? "unknown error" : Failures.unwrap(error).toString();
        long now = System.nanoTime();
        if (!sick.containsKey(tp)) {
            // a return soon after the last release: the metadata looked healthy but was not, so stay longer
            long[] strike = strikes.get(tp);
            int count = strike != null && now - strike[1] < STRIKE_MEMORY.toNanos() ? (int) strike[0] + 1 : 0;
            long hold = Math.min(MAX_HOLD.toNanos(), MIN_HOLD.toNanos() << Math.min(count, 16));
            if (sick.putIfAbsent(tp, new Sick(Instant.now(), now, hold, text)) != null) {
                return cause(tp, text, error);
            }
            strikes.put(tp, new long[] {count, now});
            log.warn("txoutbox-kafka: lane {}: partition {} failed ({}) while other partitions accepted records: its "
                    + "keys wait (at least {} ms) until it is healthy, the rest of the lane goes on", lane, tp, text,
                    TimeUnit.NANOSECONDS.toMillis(hold));
            startChecker();
        }
        return cause(tp, text, error);
    }

    private static PartitionUnavailableException cause(TopicPartition tp, String text, Throwable error) {
        return new PartitionUnavailableException(tp.toString(), "partition " + tp + " failed while other partitions "
                + "of the batch accepted records: " + text + "; its keys wait until it recovers", error);
    }

    private synchronized void startChecker() {
        if (checker != null || closed) {
            return;
        }
        checker = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "txoutbox-kafka-" + lane + "-quarantine");
            t.setDaemon(true);
            return t;
        });
        checker.scheduleWithFixedDelay(this::checkQuietly, CHECK_INTERVAL.toMillis(), CHECK_INTERVAL.toMillis(),
                TimeUnit.MILLISECONDS);
    }

    private void checkQuietly() {
        try {
            check();
        } catch (RuntimeException e) {
            log.debug("txoutbox-kafka: lane {}: partition check failed: {}", lane, e.toString());
        }
    }

    /** One round: lets out the partitions whose least time passed and which the metadata shows healthy. */
    void check() {
        if (sick.isEmpty() || closed) {
            return;
        }
        long now = System.nanoTime();
        Set<String> topics = new TreeSet<>();
        sick.keySet().forEach(tp -> topics.add(tp.topic()));
        Map<String, TopicDescription> descriptions = null;
        Map<String, Integer> minIsr = new HashMap<>();
        try {
            Admin a = admin();
            descriptions = a.describeTopics(topics).allTopicNames().get(timeoutMs, TimeUnit.MILLISECONDS);
            List<ConfigResource> resources = topics.stream()
                    .map(t -> new ConfigResource(ConfigResource.Type.TOPIC, t)).toList();
            Map<ConfigResource, Config> configs = a.describeConfigs(resources).all()
                    .get(timeoutMs, TimeUnit.MILLISECONDS);
            configs.forEach((r, c) -> {
                ConfigEntry e = c.get("min.insync.replicas");
                if (e != null && e.value() != null) {
                    minIsr.put(r.name(), Integer.parseInt(e.value()));
                }
            });
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return;
        } catch (Exception e) {
            log.debug("txoutbox-kafka: lane {}: cannot read the metadata of quarantined partitions ({}); they get a "
                    + "trial after their least time", lane, e.toString());
        }
        for (Map.Entry<TopicPartition, Sick> e : sick.entrySet()) {
            TopicPartition tp = e.getKey();
            Sick s = e.getValue();
            if (now - s.sinceNanos < s.holdNanos) {
                continue;
            }
            String verdict = descriptions == null ? "metadata unreadable, trial" : healthy(tp, descriptions, minIsr);
            if (verdict != null) {
                sick.remove(tp, s);
                strikes.computeIfPresent(tp, (k, v) -> new long[] {v[0], now});
                log.info("txoutbox-kafka: lane {}: partition {} leaves quarantine after {} ms ({}); its keys are sent "
                        + "again after their backoff", lane, tp, TimeUnit.NANOSECONDS.toMillis(now - s.sinceNanos),
                        verdict);
            }
        }
    }

    /** A reason the partition looks healthy, or null when it does not. */
    private static String healthy(TopicPartition tp, Map<String, TopicDescription> descriptions,
            Map<String, Integer> minIsr) {
        TopicDescription d = descriptions.get(tp.topic());
        if (d == null || tp.partition() >= d.partitions().size()) {
            return null;
        }
        TopicPartitionInfo p = d.partitions().get(tp.partition());
        if (p.leader() == null || p.leader().isEmpty()) {
            return null;
        }
        // the broker bounds min.insync.replicas by the replica count
        int needed = Math.min(minIsr.getOrDefault(tp.topic(), 1), Math.max(1, p.replicas().size()));
        return p.isr().size() >= needed ? "leader " + p.leader().id() + ", " + p.isr().size() + " in-sync of "
                + needed + " needed" : null;
    }

    private synchronized Admin admin() {
        if (closed) {
            throw new IllegalStateException("closed");
        }
        if (admin == null) {
            admin = Admin.create(adminProperties);
        }
        return admin;
    }

    @Override
    public void close() {
        closed = true;
        ScheduledExecutorService c;
        Admin a;
        synchronized (this) {
            c = checker;
            a = admin;
            checker = null;
            admin = null;
        }
        if (c != null) {
            c.shutdownNow();
        }
        if (a != null) {
            a.close(Duration.ofMillis(Math.min(timeoutMs, 1000)));
        }
    }
}
