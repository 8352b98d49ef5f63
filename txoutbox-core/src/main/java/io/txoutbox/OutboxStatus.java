package io.txoutbox;

import io.txoutbox.internal.StatusSql;
import io.txoutbox.internal.config.Checks;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;
import javax.sql.DataSource;

/**
 * The state of an outbox in one call, as the CLI, a status page or a health endpoint shows it:
 *
 * <pre>{@code
 * OutboxStatus status = OutboxStatus.snapshot(dataSource, OutboxSchema.defaults());
 * System.out.println(status.toText());       // pending, event age per topic and shard, parked, dead, relays
 * status.oldestPendingAge();                 // what to alert on
 * }</pre>
 *
 * <p>Times come from the database's clock, so every instance sees the same ages. The <b>event age</b> of a topic is
 * the age of its oldest pending event, from its {@code created_at} (the start of the writing transaction).
 *
 * @param backlog pending events per topic, parked keys and dead events
 * @param lanes   the relay lanes owned now, across all instances ({@link #lanes(DataSource, OutboxSchema)})
 * @param shards     pending events and event age per shard, only shards that have some, by shard
 * @param partitions the partitions of a time-partitioned outbox in range order, the default one last; empty for a
 *                   plain table
 */
public record OutboxStatus(Backlog backlog, List<LaneOwner> lanes, List<ShardStatus> shards,
        List<PartitionStatus> partitions) {

    public OutboxStatus {
        Objects.requireNonNull(backlog, "backlog");
        lanes = List.copyOf(lanes);
        shards = List.copyOf(shards);
        partitions = List.copyOf(partitions);
    }

    /**
     * One lane of the relays working this outbox, as PostgreSQL sees it: the instance holding its lock (empty when
     * nobody does), since when that session exists, and its last statement (claims and heartbeats: at least every
     * third of the lease while it owns the lane). Both times are null when the reading role may not see the relay's
     * sessions (PostgreSQL shows them to members of the relay's role and of {@code pg_read_all_stats}).
     */
    public record LaneOwner(int lane, String instanceId, Instant since, Instant lastActivity) {
    }

    /**
     * One partition of a time-partitioned outbox: the UTC times its event ids cover ({@code null}: unbounded, as for
     * the {@code _legacy} partition of a converted table), and its rows — PostgreSQL's estimate for a period's
     * partition, an exact count for the default one, whose rows mean writes reached a period with no partition (or
     * parked and dead rows were moved there when their partition was dropped).
     */
    public record PartitionStatus(String name, Instant from, Instant to, long rows, boolean isDefault) {
    }

    /** One topic with pending events: how many, and the age of the oldest. */
    public record TopicStatus(String topic, long pending, Duration oldestPendingAge) {
    }

    /**
     * One shard with pending events: how many, and the age of its head — its first pending event in claim
     * ({@code id}) order, which its lane sends next unless the head's key waits. Found through the pending index
     * alone plus one lookup per shard; the head is the oldest pending event of the shard except where a transaction
     * inserted long after it began: such an event can be older (by {@code created_at}) than the head, by at most that
     * transaction's time before its insert.
     */
    public record ShardStatus(int shard, long pending, Duration oldestPendingAge) {
    }

    /**
     * The counts alone, without the relays: what gauges and health checks sample (two statements). Parked keys: each
     * parked key has one parked head event, the key's later events wait as pending behind it.
     *
     * @param takenAt    the database's time of the reading
     * @param topics     topics with pending events, by name
     * @param parkedKeys keys whose head event is parked
     * @param deadEvents events given up by the failure policy or by an operator
     */
    public record Backlog(Instant takenAt, List<TopicStatus> topics, long parkedKeys, long deadEvents) {

        public Backlog {
            Objects.requireNonNull(takenAt, "takenAt");
            topics = List.copyOf(topics);
        }

        /** Pending events of all topics (including those held back behind parked keys). */
        public long pending() {
            long n = 0;
            for (TopicStatus t : topics) {
                n += t.pending();
            }
            return n;
        }

        /** The age of the oldest pending event of any topic; zero when nothing is pending. */
        public Duration oldestPendingAge() {
            Duration max = Duration.ZERO;
            for (TopicStatus t : topics) {
                if (t.oldestPendingAge().compareTo(max) > 0) {
                    max = t.oldestPendingAge();
                }
            }
            return max;
        }
    }

    /** Reads the backlog, the lane owners and the pending events per shard (four short statements). */
    public static OutboxStatus snapshot(DataSource dataSource, OutboxSchema schema) {
        Objects.requireNonNull(dataSource, "dataSource");
        Checks.schema("status", schema);
        Backlog backlog = backlog(dataSource, schema);
        List<ShardStatus> shards = shards(dataSource, schema);
        List<PartitionStatus> partitions = schema.isPartitioned() ? new StatusSql(schema).partitions(dataSource)
                : List.of();
        return new OutboxStatus(backlog, lanes(dataSource, schema), shards, partitions);
    }

    /** Reads only the lanes owned now, across all relay instances of this outbox (one statement), by lane. */
    public static List<LaneOwner> lanes(DataSource dataSource, OutboxSchema schema) {
        Objects.requireNonNull(dataSource, "dataSource");
        Checks.schema("status", schema);
        return new StatusSql(schema).lanes(dataSource);
    }

    /**
     * Reads only the number of pending events, including those held back behind parked keys (one statement over the
     * pending index): for a drain check; gauges sample {@link #backlog}.
     */
    public static long pendingCount(DataSource dataSource, OutboxSchema schema) {
        Objects.requireNonNull(dataSource, "dataSource");
        Checks.schema("status", schema);
        return new StatusSql(schema).pendingCount(dataSource);
    }

    /** Reads only the backlog (two statements): for gauges and health checks sampled every few seconds. */
    public static Backlog backlog(DataSource dataSource, OutboxSchema schema) {
        Objects.requireNonNull(dataSource, "dataSource");
        Checks.schema("status", schema);
        return new StatusSql(schema).backlog(dataSource);
    }

    /** Reads only the pending events and event age per shard (one statement), by shard. */
    public static List<ShardStatus> shards(DataSource dataSource, OutboxSchema schema) {
        Objects.requireNonNull(dataSource, "dataSource");
        Checks.schema("status", schema);
        return new StatusSql(schema).shards(dataSource);
    }

    public Instant takenAt() {
        return backlog.takenAt();
    }

    public long pending() {
        return backlog.pending();
    }

    public Duration oldestPendingAge() {
        return backlog.oldestPendingAge();
    }

    public long parkedKeys() {
        return backlog.parkedKeys();
    }

    public long deadEvents() {
        return backlog.deadEvents();
    }

    /** Pending events per shard, only shards that have some. */
    public Map<Integer, Long> pendingByShard() {
        Map<Integer, Long> out = new TreeMap<>();
        for (ShardStatus s : shards) {
            out.put(s.shard(), s.pending());
        }
        return Collections.unmodifiableMap(out);
    }

    /** The relay instances that own lanes now, each with its lanes in order. */
    public Map<String, List<Integer>> instances() {
        Map<String, List<Integer>> out = new TreeMap<>();
        for (LaneOwner owner : lanes) {
            out.computeIfAbsent(owner.instanceId(), k -> new ArrayList<>()).add(owner.lane());
        }
        out.replaceAll((k, v) -> List.copyOf(v));
        return out;
    }

    /** A plain-text rendering for a terminal: one fact per line, ages in seconds. */
    public String toText() {
        StringBuilder b = new StringBuilder();
        b.append("outbox status at ").append(takenAt()).append('\n');
        b.append("pending: ").append(pending()).append(", oldest ").append(seconds(oldestPendingAge())).append('\n');
        for (TopicStatus t : backlog.topics()) {
            b.append("  topic ").append(t.topic()).append(": ").append(t.pending()).append(" pending, oldest ")
                    .append(seconds(t.oldestPendingAge())).append('\n');
        }
        b.append("parked keys: ").append(parkedKeys()).append('\n');
        b.append("dead events: ").append(deadEvents()).append('\n');
        Map<String, List<Integer>> instances = instances();
        b.append("relay instances: ").append(instances.size()).append(", lanes owned: ").append(lanes.size())
                .append('\n');
        for (Map.Entry<String, List<Integer>> e : instances.entrySet()) {
            b.append("  ").append(e.getKey()).append(": lanes ").append(e.getValue()).append('\n');
        }
        if (!shards.isEmpty()) {
            Map<Integer, String> ages = new TreeMap<>();
            shards.forEach(s -> ages.put(s.shard(), seconds(s.oldestPendingAge())));
            b.append("pending by shard: ").append(pendingByShard()).append('\n');
            b.append("oldest by shard: ").append(ages).append('\n');
        }
        if (!partitions.isEmpty()) {
            List<PartitionStatus> periods = partitions.stream().filter(p -> !p.isDefault()).toList();
            b.append("partitions: ").append(periods.size());
            if (!periods.isEmpty()) {
                b.append(", ").append(periods.get(0).name()).append(" … ").append(periods.get(periods.size() - 1)
                        .name()).append(", up to ").append(periods.get(periods.size() - 1).to());
            }
            b.append('\n');
            partitions.stream().filter(PartitionStatus::isDefault).forEach(p -> b.append("default partition: ")
                    .append(p.rows()).append(p.rows() == 1 ? " row" : " rows").append('\n'));
        }
        return b.toString();
    }

    @Override
    public String toString() {
        return toText();
    }

    private static String seconds(Duration d) {
        return String.format(Locale.ROOT, "%.1f s", d.toMillis() / 1000.0);
    }
}
