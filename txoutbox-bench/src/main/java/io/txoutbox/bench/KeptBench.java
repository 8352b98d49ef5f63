package io.txoutbox.bench;

import io.txoutbox.OutboxSchema;
import io.txoutbox.PollingRelay;
import io.txoutbox.spi.RelayListener;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.atomic.LongAdder;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * The relay's drain rate on a table that keeps many published rows (audit, replay), plain and time-partitioned,
 * against the same relay on an empty table: each table is filled once, then every round drains a fresh backlog from
 * each, in rotating order, to the same broker.
 */
@Command(name = "kept", mixinStandardHelpOptions = true,
        description = "Relay drain rate with N published rows kept in the table: empty vs plain vs partitioned.")
final class KeptBench implements Callable<Integer> {

    private static final Logger log = LoggerFactory.getLogger(KeptBench.class);

    @Mixin
    CommonOptions common;

    @Option(names = "--kept", defaultValue = "10000000", description = "published rows kept (default ${DEFAULT-VALUE})")
    long kept;

    @Option(names = "--events", defaultValue = "200000", description = "backlog per drain (default ${DEFAULT-VALUE})")
    long events;

    @Option(names = "--rounds", defaultValue = "2")
    int rounds;

    @Option(names = "--lanes", defaultValue = "4")
    int lanes;

    @Option(names = "--batch-size", defaultValue = "2000")
    int batchSize;

    private record Arm(String name, OutboxSchema schema) {
    }

    /** Where a drain's batches spent their time: claim, send and mark, summed over the lanes' batches. */
    private static final class Anatomy implements RelayListener {
        final LongAdder batches = new LongAdder();
        final LongAdder claim = new LongAdder();
        final LongAdder send = new LongAdder();
        final LongAdder mark = new LongAdder();

        @Override
        public void batchCompleted(int size, long claimNanos, long sendNanos, long markNanos) {
            batches.increment();
            claim.add(claimNanos);
            send.add(sendNanos);
            mark.add(markNanos);
        }

        String describe() {
            long n = Math.max(1, batches.sum());
            return String.format("%d batches, per batch: claim %.1f ms, send %.1f ms, mark %.1f ms", batches.sum(),
                    claim.sum() / 1e6 / n, send.sum() / 1e6 / n, mark.sum() / 1e6 / n);
        }
    }

    @Override
    public Integer call() throws Exception {
        Events gen = new Events(common.keys, common.payloadBytes);
        try (BenchEnv env = new BenchEnv(common)) {
            System.out.printf("kept: kept=%d events=%d rounds=%d lanes=%d batch=%d mode=%s; load %s%n", kept, events,
                    rounds, lanes, batchSize, common.mode, BenchEnv.loadAverage());
            List<Arm> arms = List.of(
                    new Arm("plain, empty", plain(env, "bench_kept_empty")),
                    new Arm("plain, " + kept + " kept", fill(env, plain(env, "bench_kept_plain"))),
                    new Arm("partitioned daily, " + kept + " kept", fill(env, partitioned(env, "bench_kept_part"))));
            Map<String, List<Double>> rates = new LinkedHashMap<>();
            Map<String, List<String>> anatomies = new LinkedHashMap<>();
            arms.forEach(a -> rates.put(a.name, new ArrayList<>()));
            arms.forEach(a -> anatomies.put(a.name, new ArrayList<>()));
            for (int round = 0; round < rounds; round++) {
                for (int k = 0; k < arms.size(); k++) {
                    Arm arm = arms.get((k + round) % arms.size());
                    Anatomy anatomy = new Anatomy();
                    double rate = drain(env, gen, arm, "r" + (round + 1) + "_" + k, anatomy);
                    log.info("round {}: {}: {} events/s; {}", round + 1, arm.name, Stats.fmt(rate),
                            anatomy.describe());
                    rates.get(arm.name).add(rate);
                    anatomies.get(arm.name).add(anatomy.describe());
                }
            }
            double base = rates.get(arms.get(0).name).stream().mapToDouble(Double::doubleValue).average().orElse(1);
            System.out.println("| table | drain events/s, by round | mean | vs empty |");
            System.out.println("|---|---|---:|---:|");
            for (Arm a : arms) {
                List<Double> r = rates.get(a.name);
                double mean = r.stream().mapToDouble(Double::doubleValue).average().orElse(0);
                System.out.printf("| %s | %s | %s | %.2f |%n", a.name,
                        String.join(" / ", r.stream().map(Stats::fmt).toList()), Stats.fmt(mean), mean / base);
            }
            for (Arm a : arms) {
                anatomies.get(a.name).forEach(line -> System.out.printf("%s: %s%n", a.name, line));
            }
            for (Arm a : arms) {
                System.out.printf("%s: table size %s%n", a.name, env.queryString("SELECT pg_size_pretty(sum("
                        + "pg_total_relation_size(c.oid))) FROM pg_class c JOIN pg_namespace n ON n.oid ="
                        + " c.relnamespace WHERE n.nspname = '" + a.schema.schema() + "' AND c.relkind = 'r'"));
            }
            System.out.println("load at end " + BenchEnv.loadAverage());
            for (Arm a : arms) {
                Backlog.dropSchema(env, a.schema);
            }
        }
        return 0;
    }

    private static OutboxSchema partitioned(BenchEnv env, String name) throws Exception {
        Backlog.createSchema(env, name);
        return Backlog.backdatedPartitionedSchema(env.dataSource(), name);
    }

    private static OutboxSchema plain(BenchEnv env, String name) {
        return Backlog.createSchema(env, name);
    }

    /** {@code kept} published rows with UUIDv7 ids of 10 to 3 days ago, written by the database in chunks. */
    private OutboxSchema fill(BenchEnv env, OutboxSchema schema) {
        long t0 = System.nanoTime();
        long chunk = 1_000_000;
        long spanMs = Duration.ofDays(7).toMillis();
        String payload = "{\"p\":\"" + "x".repeat(Math.max(0, common.payloadBytes - 8)) + "\"}";
        for (long from = 1; from <= kept; from += chunk) {
            long to = Math.min(kept, from + chunk - 1);
            String at = "((extract(epoch FROM now() - interval '10 days') * 1000)::bigint + (g * " + spanMs + ") / "
                    + kept + ")";
            env.execute("INSERT INTO " + schema.qualifiedOutboxTable() + " (event_id, topic, partition_key,"
                    + " aggregate_type, aggregate_id, event_type, payload, state, created_at, published_at)"
                    + " SELECT " + Backlog.uuidV7At(at) + ", 'kept', 'k-' || (g % 1000),"
                    + " 'Order', g::text, 'E', '" + payload + "'::jsonb, 'PUBLISHED', to_timestamp(" + at
                    + " / 1000.0), to_timestamp(" + at + " / 1000.0) FROM generate_series(" + from + "::bigint, " + to
                    + "::bigint) g");
        }
        env.execute("VACUUM ANALYZE " + schema.qualifiedOutboxTable(), "CHECKPOINT");
        log.info("filled {} with {} rows in {} s", schema, kept, (System.nanoTime() - t0) / 1_000_000_000);
        return schema;
    }

    /**
     * One timed drain. The backlog is written (and analyzed, checkpointed) while no relay runs — a running relay polls
     * and would start draining before the clock starts — after a warm-up relay of the same name has run the code
     * paths; the timed relay is started with the clock.
     */
    private double drain(BenchEnv env, Events gen, Arm arm, String id, Anatomy anatomy) throws Exception {
        String topic = "kept-" + id;
        env.createTopic(topic, Map.of());
        String name = "kept-" + id.replace('_', '-');
        try (CommittedReader reader = new CommittedReader(env.bootstrapServers(), topic, null)) {
            PollingRelay warm = relay(env, arm, name, RelayListener.none()).start();
            try {
                RelayWarmUp.run(env, warm, arm.schema, gen, topic + "-warm");
            } finally {
                warm.close();
            }
            reader.awaitReady();
            Backlog.write(env, arm.schema, gen, topic, events);
            PollingRelay relay = relay(env, arm, name, anatomy);
            try {
                long t0 = System.nanoTime();
                relay.start();
                long deadline = t0 + Duration.ofMinutes(10).toNanos();
                while (relay.stats().published() < events) {
                    if (System.nanoTime() > deadline) {
                        throw new IllegalStateException("relay published " + relay.stats().published() + " of "
                                + events + " in 10 minutes");
                    }
                    Thread.sleep(0, 500_000);
                }
                long tMarked = System.nanoTime();
                long tRead = reader.awaitCount(events, Duration.ofMinutes(5));
                return events / ((Math.max(tMarked, tRead) - t0) / 1e9);
            } finally {
                relay.close();
            }
        } finally {
            env.deleteTopic(topic);
            env.deleteTopic(topic + "-warm");
        }
    }

    private PollingRelay relay(BenchEnv env, Arm arm, String name, RelayListener listener) {
        return PollingRelay.builder().dataSource(env.dataSource()).listener(listener)
                .transport(KafkaTransports.create(env.bootstrapServers(), ProducerSettings.effective(common), common))
                .schema(arm.schema).name(name).lanes(lanes).batchSize(batchSize).build();
    }
}
