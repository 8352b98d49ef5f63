package io.txoutbox.bench;

import io.txoutbox.Outbox;
import io.txoutbox.OutboxMessage;
import io.txoutbox.OutboxSchema;
import io.txoutbox.PollingRelay;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.Callable;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * Backlog drain: N committed events are written first (not timed); then each contender is timed until every event
 * is marked PUBLISHED (where it marks; the relay: delivered, by its own count) and a read_committed consumer has read
 * all N. Contenders run in the same JVM against the same services, one after another, in an order that rotates every
 * round. Each relay configuration runs once per progress model ({@code --progress}); under the cursor model a
 * delivered event is published once its lane's cursor passes it, which the relay's cost window waits for.
 */
@Command(name = "drain", mixinStandardHelpOptions = true,
        description = "Backlog drain: PollingRelay vs raw producer vs naive relay, alternating rounds.")
final class DrainBench implements Callable<Integer>, DrainRun {

    private static final Logger log = LoggerFactory.getLogger(DrainBench.class);

    @Mixin
    CommonOptions common;

    @Spec
    CommandSpec spec;

    @Mixin
    Progress.Choice progress;

    @Option(names = "--events", defaultValue = "200000", description = "backlog size (default ${DEFAULT-VALUE})")
    long events;

    @Option(names = "--rounds", defaultValue = "3", description = "rounds (default ${DEFAULT-VALUE})")
    int rounds;

    @Option(names = "--relay", split = ",", defaultValue = "2x500,1x500,2x2000,1x2000",
            description = "relay contenders as LANESxBATCH, or INSTANCESxLANESxBATCH for several relay instances "
                    + "sharing the lanes (default ${DEFAULT-VALUE})")
    List<String> relayConfigs;

    @Option(names = "--naive-events", defaultValue = "2000",
            description = "backlog of the naive relay with the shared producer settings (default ${DEFAULT-VALUE})")
    long naiveEvents;

    @Option(names = "--naive-linger0-events", defaultValue = "5000",
            description = "backlog of the naive relay with linger.ms=0; 0 skips it (default ${DEFAULT-VALUE})")
    long naiveLinger0Events;

    @Option(names = "--no-raw", description = "skip the raw producer")
    boolean noRaw;

    @Option(names = "--pg-only", split = ",", defaultValue = "500",
            description = "batch sizes of the PostgreSQL-only path (the relay's claim + mark, no Kafka); "
                    + "0 skips it (default ${DEFAULT-VALUE})")
    List<Integer> pgOnlyBatches;

    BenchEnv env;
    Events gen;

    /** One timed run of a contender. */
    record Result(long events, double seconds, long walDrainBytes, long walWriteBytes, double writeSeconds,
                  boolean reachedEnd, long notPublished, Anatomy anatomy, CostReport cost) {
        Result(long events, double seconds, long walDrainBytes, long walWriteBytes, double writeSeconds,
               boolean reachedEnd, long notPublished) {
            this(events, seconds, walDrainBytes, walWriteBytes, writeSeconds, reachedEnd, notPublished, null, null);
        }

        double rate() {
            return events / seconds;
        }
    }

    /** Where a relay lane's time per batch went: wall time per batch per lane, and the transport's part of it. */
    record Anatomy(long batches, double wallMsPerBatch, double transportMsPerBatch, double transportMaxMs) {
    }

    interface Contender {
        String name();

        Result run(String id) throws Exception;
    }

    @Override
    public Integer call() throws Exception {
        gen = new Events(common.keys, common.payloadBytes);
        List<Contender> contenders = new ArrayList<>();
        for (String rc : relayConfigs) {
            String[] p = rc.trim().toLowerCase().split("x");
            int instances = p.length == 3 ? Integer.parseInt(p[0]) : 1;
            for (Progress model : progress.models) {
                contenders.add(new DrainRelayContender(this, instances, Integer.parseInt(p[p.length - 2]),
                        Integer.parseInt(p[p.length - 1]), model));
            }
        }
        if (!noRaw) {
            contenders.add(new RawContender());
        }
        for (int b : pgOnlyBatches) {
            if (b > 0) {
                contenders.add(new DrainPgOnlyContender(this, b));
            }
        }
        if (naiveEvents > 0) {
            contenders.add(new NaiveContender(naiveEvents, null));
        }
        if (naiveLinger0Events > 0) {
            contenders.add(new NaiveContender(naiveLinger0Events, "0"));
        }
        // the broker in-process by default, as in every earlier drain: figures stay comparable; its threads are
        // counted apart by name
        try (BenchEnv e = new BenchEnv(common, false, true)) {
            env = e;
            Map<String, List<Result>> results = new LinkedHashMap<>();
            contenders.forEach(c -> results.put(c.name(), new ArrayList<>()));
            for (int round = 0; round < rounds; round++) {
                for (int k = 0; k < contenders.size(); k++) {
                    // rotate the order every round so no contender always runs first (cold) or last (warm)
                    Contender c = contenders.get((k + round) % contenders.size());
                    String id = "r" + (round + 1) + "_" + k;
                    log.info("round {}/{}: {} ...", round + 1, rounds, c.name());
                    Result r = c.run(id);
                    log.info("round {}/{}: {}: {} events in {} s = {} events/s{}", round + 1, rounds, c.name(),
                            r.events, String.format("%.2f", r.seconds), Stats.fmt(r.rate()),
                            r.walDrainBytes >= 0 ? ", WAL " + r.walDrainBytes / r.events + " B/event" : "");
                    results.get(c.name()).add(r);
                }
            }
            report(results, e.describe());
        }
        return 0;
    }

    private void report(Map<String, List<Result>> results, List<String> machine) {
        StringBuilder out = new StringBuilder();
        out.append("\n## drain\n\n");
        machine.forEach(l -> out.append("- ").append(l).append('\n'));
        results.forEach((name, rs) -> rs.stream().map(Result::cost).filter(java.util.Objects::nonNull)
                .reduce(CostReport::plus).ifPresent(c -> out.append("- ").append(name).append(": ")
                        .append(c.saturationLine()).append('\n')));
        out.append("- producer settings (all contenders): ").append(ProducerSettings.effective(common)).append('\n');
        out.append("- command: ").append(command()).append("\n\n");
        Stats.Table t = new Stats.Table("contender", "events", "events/s per round", "median events/s",
                "min–max", "WAL B/event drain", "WAL B/event write", "write events/s", "checks");
        Map<String, Double> medians = new LinkedHashMap<>();
        for (var en : results.entrySet()) {
            List<Result> rs = en.getValue();
            List<Double> rates = rs.stream().map(Result::rate).toList();
            double med = Stats.median(rates);
            medians.put(en.getKey(), med);
            String per = String.join(" / ", rates.stream().map(Stats::fmt).toList());
            double walDrain = Stats.median(rs.stream().map(r -> (double) r.walDrainBytes / r.events).toList());
            double walWrite = Stats.median(rs.stream().map(r -> (double) r.walWriteBytes / r.events).toList());
            double writeRate = Stats.median(rs.stream().map(r -> r.events / r.writeSeconds).toList());
            boolean ok = rs.stream().allMatch(r -> r.reachedEnd && r.notPublished <= 0);
            t.row(en.getKey(), rs.get(0).events, per, Stats.fmt(med),
                    Stats.fmt(Stats.min(rates)) + "–" + Stats.fmt(Stats.max(rates)),
                    rs.get(0).walDrainBytes >= 0 ? Stats.fmt(walDrain) : "-",
                    rs.get(0).walWriteBytes >= 0 ? Stats.fmt(walWrite) : "-",
                    rs.get(0).walWriteBytes >= 0 ? Stats.fmt(writeRate) : "-",
                    ok ? "ok" : "NOT ALL PUBLISHED/READ");
        }
        out.append(t).append('\n');
        Stats.Table ratios = new Stats.Table("relay contender (PG path: for reference)", "÷ raw (target ≥ 0.40)", "× naive (target ≥ 10)",
                "× naive linger.ms=0", "per-round ÷ raw");
        for (var en : results.entrySet()) {
            if (!en.getKey().startsWith("relay") && !en.getKey().startsWith("PG")) {
                continue;
            }
            double med = medians.get(en.getKey());
            List<Result> raw = results.get("raw producer");
            String perRound = "-";
            if (raw != null) {
                List<String> rr = new ArrayList<>();
                for (int i = 0; i < Math.min(raw.size(), en.getValue().size()); i++) {
                    rr.add(Stats.fmt(en.getValue().get(i).rate() / raw.get(i).rate()));
                }
                perRound = String.join(" / ", rr);
            }
            ratios.row(en.getKey(), ratio(med, medians.get("raw producer")),
                    ratio(med, medians.get(naiveName(null))), ratio(med, medians.get(naiveName("0"))), perRound);
        }
        out.append(ratios).append('\n');
        Stats.Table an = new Stats.Table("relay contender", "batches", "ms per batch per lane (wall)",
                "of which in transport (Kafka txn) [PG only: claim]", "transport max ms", "rest: claim + mark + commit (PostgreSQL)");
        for (var en : results.entrySet()) {
            List<Result> rs = en.getValue();
            if (rs.get(0).anatomy == null) {
                continue;
            }
            double wall = Stats.median(rs.stream().map(r -> r.anatomy.wallMsPerBatch()).toList());
            double tr = Stats.median(rs.stream().map(r -> r.anatomy.transportMsPerBatch()).toList());
            an.row(en.getKey(), rs.get(0).anatomy.batches(), Stats.fmt(wall), Stats.fmt(tr),
                    Stats.fmt(Stats.max(rs.stream().map(r -> r.anatomy.transportMaxMs()).toList())),
                    Stats.fmt(wall - tr));
        }
        out.append("\nrelay batch anatomy (medians over rounds):\n\n").append(an);
        Stats.Table summary = CostReport.summaryTable("relay contender");
        for (var en : results.entrySet()) {
            en.getValue().stream().map(Result::cost).filter(java.util.Objects::nonNull).reduce(CostReport::plus)
                    .ifPresent(c -> c.summaryRow(summary, en.getKey()));
        }
        out.append("\nwhat the relay cost per event (drain windows of all rounds; details below):\n\n")
                .append(summary);
        for (var en : results.entrySet()) {
            CostReport cost = en.getValue().stream().map(Result::cost).filter(java.util.Objects::nonNull)
                    .reduce(CostReport::plus).orElse(null);
            if (cost != null) {
                out.append("\n### what the relay cost: ").append(en.getKey()).append(" (drain windows of all rounds;"
                        + " writers: the backlog's write phase, ").append(Outbox.MAX_ROWS_PER_STATEMENT)
                        .append(" rows per INSERT, one transaction)\n\n");
                cost.lines().forEach(l -> out.append(l).append('\n'));
            }
        }
        System.out.println(out);
    }

    private static String ratio(double a, Double b) {
        return b == null ? "-" : Stats.fmt(a / b);
    }

    private String command() {
        return "bench drain " + String.join(" ", spec.commandLine().getParseResult().originalArgs());
    }

    @Override
    public BenchEnv env() {
        return env;
    }

    @Override
    public CommonOptions common() {
        return common;
    }

    @Override
    public Events gen() {
        return gen;
    }

    @Override
    public long events() {
        return events;
    }

    // ---- contenders -------------------------------------------------------------------------------------------


    /** A plain idempotent producer sending the same records as fast as it can: the transport's ceiling. */
    private final class RawContender implements Contender {
        @Override
        public String name() {
            return "raw producer";
        }

        @Override
        public Result run(String id) throws Exception {
            String topic = "drain-" + id;
            env.createTopic(topic, Map.of());
            byte[][] values = new byte[(int) events][];
            UUID[] ids = new UUID[(int) events];
            for (int i = 0; i < events; i++) {
                values[i] = gen.payload(i).getBytes(StandardCharsets.UTF_8);
                ids[i] = UUID.randomUUID();
            }
            AtomicReference<Exception> failed = new AtomicReference<>();
            try (KafkaProducer<byte[], byte[]> producer = ProducerSettings.producer(env.bootstrapServers(),
                    ProducerSettings.effective(common), "bench-raw-" + id);
                 CommittedReader reader = new CommittedReader(env.bootstrapServers(), topic, null)) {
                producer.send(new ProducerRecord<>(topic, 0, null, new byte[0])).get(); // warm: metadata, PID
                reader.awaitReady();
                long t0 = System.nanoTime();
                for (int i = 0; i < events; i++) {
                    producer.send(gen.record(topic, i, ids[i], values[i]), (md, ex) -> {
                        if (ex != null) {
                            failed.compareAndSet(null, ex);
                        }
                    });
                }
                producer.flush();
                long tFlushed = System.nanoTime();
                long t1 = reader.awaitCount(events + 1, timeout(events));
                log.info("  flushed at {} ms, read at {} ms", (tFlushed - t0) / 1_000_000, (t1 - t0) / 1_000_000);
                if (!reader.reachedEndOffsets()) {
                    log.warn("  raw: reader at {} records but not at the end offsets: {}", reader.count(),
                            reader.positions());
                }
                if (failed.get() != null) {
                    throw new IllegalStateException("raw producer send failed", failed.get());
                }
                return new Result(events, (t1 - t0) / 1e9, -1, -1, 1, reader.reachedEndOffsets(), 0);
            } finally {
                env.deleteTopic(topic);
            }
        }
    }

    private static String naiveName(String linger) {
        return linger == null ? "naive relay" : "naive relay linger.ms=" + linger;
    }

    /**
     * The seed examples' relay: claim 100 rows FOR UPDATE SKIP LOCKED, then per row {@code send().get()} and an
     * UPDATE, commit per batch. Same producer settings (idempotent, not transactional) unless {@code linger} is set.
     */
    private final class NaiveContender implements Contender {
        private final long n;
        private final String linger;

        NaiveContender(long n, String linger) {
            this.n = n;
            this.linger = linger;
        }

        @Override
        public String name() {
            return naiveName(linger);
        }

        @Override
        public Result run(String id) throws Exception {
            String topic = "drain-" + id;
            env.createTopic(topic, Map.of());
            OutboxSchema schema = Backlog.createSchema(env, "bench_" + id);
            Map<String, String> settings = ProducerSettings.effective(common);
            if (linger != null) {
                settings.put(ProducerConfig.LINGER_MS_CONFIG, linger);
            }
            String t = schema.qualifiedOutboxTable();
            // The seeds select "WHERE published_at IS NULL"; here the pending rows are indexed by state, and a
            // query that cannot use the index would seq-scan the whole table every batch, so it uses state.
            String select = "SELECT id, event_id, topic, partition_key, aggregate_type, aggregate_id, event_type,"
                    + " payload::text FROM " + t + " WHERE state = 'PENDING' ORDER BY id LIMIT 100"
                    + " FOR UPDATE SKIP LOCKED";
            String update = "UPDATE " + t + " SET state = 'PUBLISHED', published_at = now() WHERE id = ?";
            try (KafkaProducer<byte[], byte[]> producer = ProducerSettings.producer(env.bootstrapServers(), settings,
                    "bench-naive-" + id);
                 CommittedReader reader = new CommittedReader(env.bootstrapServers(), topic, null);
                 Connection c = env.dataSource().getConnection()) {
                producer.send(new ProducerRecord<>(topic, 0, null, new byte[0])).get();
                reader.awaitReady();
                Backlog.Written w = Backlog.write(env, schema, gen, topic, n);
                c.setAutoCommit(false);
                String lsn0 = env.walLsn();
                long t0 = System.nanoTime();
                long sent = 0;
                try (PreparedStatement sel = c.prepareStatement(select);
                     PreparedStatement upd = c.prepareStatement(update)) {
                    while (true) {
                        int rows = 0;
                        try (ResultSet rs = sel.executeQuery()) {
                            while (rs.next()) {
                                rows++;
                                byte[] key = rs.getString(4).getBytes(StandardCharsets.UTF_8);
                                RecordHeaders h = Events.headers(rs.getObject(2).toString(), rs.getString(6),
                                        Events.TRACEPARENT);
                                producer.send(new ProducerRecord<>(rs.getString(3), null, key,
                                        rs.getString(8).getBytes(StandardCharsets.UTF_8), h)).get();
                                upd.setLong(1, rs.getLong(1));
                                upd.executeUpdate();
                            }
                        }
                        c.commit();
                        sent += rows;
                        if (rows == 0) {
                            break;
                        }
                    }
                }
                long t1 = reader.awaitCount(n + 1, timeout(n));
                long wal = env.walBytesBetween(lsn0, env.walLsn());
                return new Result(sent, (t1 - t0) / 1e9, wal, w.walBytes(), w.seconds(), reader.reachedEndOffsets(),
                        Backlog.notPublished(env, schema));
            } finally {
                Backlog.dropSchema(env, schema);
                env.deleteTopic(topic);
            }
        }
    }
}
