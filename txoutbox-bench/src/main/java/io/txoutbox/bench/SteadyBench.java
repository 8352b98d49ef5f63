package io.txoutbox.bench;

import io.txoutbox.PollingRelay;
import io.txoutbox.RelayConfig;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** Commit-to-broker-append latency at fixed open-loop rates, one event per transaction. */
@Command(name = "steady", mixinStandardHelpOptions = true,
        description = "Open-loop writers at fixed rates; latency = broker append time - commit return time.")
final class SteadyBench implements Callable<Integer> {

    private static final Logger log = LoggerFactory.getLogger(SteadyBench.class);

    @Mixin
    CommonOptions common;

    @Spec
    CommandSpec spec;

    @Mixin
    Progress.Choice progress;

    @Option(names = "--rates", split = ",", defaultValue = "1000,10000",
            description = "events/s, one run each (default ${DEFAULT-VALUE})")
    List<Integer> rates;

    @Option(names = "--duration", defaultValue = "60", description = "measured seconds per rate (default ${DEFAULT-VALUE})")
    double duration;

    @Option(names = "--warmup", defaultValue = "5", description = "seconds at the rate before measuring (default ${DEFAULT-VALUE})")
    double warmup;

    @Option(names = "--analyze", negatable = true, defaultValue = "true", fallbackValue = "true",
            description = "ANALYZE the outbox table when the warm-up ends, as autovacuum has on a table that has run a "
                    + "while (default ${DEFAULT-VALUE}); --no-analyze measures a table a few seconds old, which the "
                    + "planner sees with no statistics (its partial indexes taken as nearly empty)")
    boolean analyze;

    @Option(names = "--writers", defaultValue = "8", description = "writer threads/connections (default ${DEFAULT-VALUE})")
    int writers;

    @Option(names = "--lanes", defaultValue = "" + RelayConfig.DEFAULT_LANES, description = "relay lanes (default ${DEFAULT-VALUE})")
    int lanes;

    @Option(names = "--batch", defaultValue = "" + RelayConfig.DEFAULT_BATCH_SIZE, description = "relay batch size (default ${DEFAULT-VALUE})")
    int batch;

    @Option(names = "--linger", defaultValue = "0", description = "relay linger in ms, the relay.linger setting (default ${DEFAULT-VALUE})")
    long lingerMs;

    @Option(names = "--nudge", split = ",", defaultValue = "shard",
            description = "how a publish wakes the relay: shard (Outbox.Builder#nudge(relay), the lane of the written "
                    + "shard) or all (afterPublish(relay::nudge), every lane); a list alternates, like --progress "
                    + "(default ${DEFAULT-VALUE})")
    List<String> nudges;

    @Override
    public Integer call() throws Exception {
        Events gen = new Events(common.keys, common.payloadBytes);
        List<String> costs = new ArrayList<>();
        List<String> saturation = new ArrayList<>();
        // the broker in its own JVM by default: its CPU apart from the relay's and the load generator's
        try (BenchEnv env = new BenchEnv(common, true, true)) {
            Stats.Table t = new Stats.Table("target events/s", "progress", "achieved events/s", "committed",
                    "undelivered", "p50 ms", "p90 ms", "p99 ms", "p99.9 ms", "max ms", "writer lag p99 ms",
                    "claim at end");
            Stats.Table summary = CostReport.summaryTable("target events/s, progress");
            List<Progress> models = progress.models;
            for (String n : nudges) {
                if (!n.equals("shard") && !n.equals("all")) {
                    throw new CommandLine.ParameterException(spec.commandLine(),
                            "--nudge takes shard or all (a comma-separated list alternates), not '" + n + "'");
                }
            }
            int variants = models.size() * nudges.size();
            for (int k = 0; k < rates.size() * variants; k++) {
                // each rate once per model and nudge, their order rotating from rate to rate: a rate repeated
                // (--rates 1000,1000,1000) makes rounds
                int rate = rates.get(k / variants);
                int v = (k + k / variants) % variants;
                Progress model = models.get(v % models.size());
                String nudge = nudges.get(v / models.size());
                String id = "st" + (k + 1) + "_" + rate;
                log.info("steady: {} events/s for {} s (+{} s warm-up), {} writers, relay lanes={} batch={} linger={}ms"
                        + " progress={} nudge={}", rate, duration, warmup, writers, lanes, batch, lingerMs,
                        model.label(), nudge);
                try (SteadyRun run = new SteadyRun(env, gen, id, rate, warmup + duration, writers);
                     AutoCloseable in = model.use(run.schema())) { // the relay, built in start(), takes it
                    run.start(lanes, batch, java.time.Duration.ofMillis(lingerMs), nudge.equals("shard"));
                    run.awaitElapsed(warmup);
                    if (analyze) {
                        env.execute("ANALYZE " + run.schema().qualifiedOutboxTable());
                    }
                    CostWindow cw = CostWindow.open(env, run.schema());
                    PollingRelay.RelayStats s0 = run.relay().stats();
                    run.awaitElapsed(warmup + duration);
                    PollingRelay.RelayStats s1 = run.relay().stats();
                    // no wait for the table counters: both ends lag by about the same second of work
                    CostReport cost = cw.close(s1.published() - s0.published(), s1.batches() - s0.batches(), -1, -1,
                            0);
                    String label = rate + " events/s, progress=" + model.label() + ", nudge=" + nudge;
                    costs.add("\n### what the relay cost at " + label + " (the measured " + duration
                            + " s; µs per event the relay published)\n");
                    costs.addAll(cost.lines());
                    cost.summaryRow(summary, label);
                    saturation.add("- " + label + ": " + cost.saturationLine() + "; load average "
                            + cost.cpu().loadStart() + " → " + cost.cpu().loadEnd() + " over the measured window");
                    log.info("steady {}: relay {} µs/event ({} threads + {} backends), {} events/batch, {} round"
                                    + " trips/batch", label, Stats.fmt(cost.relayMicrosPerEvent()),
                            Stats.fmt(CostReport.microsPerEvent(cost.relayThreadNanos(), cost.published())),
                            Stats.fmt(CostReport.microsPerEvent(cost.relayBackendNanos(), cost.published())),
                            Stats.fmt(cost.eventsPerBatch()), Stats.fmt(cost.roundTripsPerBatch()));
                    run.finish(Duration.ofSeconds(60));
                    String probe = run.claimProbe(lanes, batch);
                    // by commit time; a pool that falls behind commits after the schedule's end: count those too
                    SteadyRun.Window w = run.window(warmup, Math.max(warmup + duration, run.lastCommit()));
                    t.row(rate, model.label() + ", nudge " + nudge, Stats.fmt(w.achievedRate()), w.committed(), w.undelivered(), Stats.ms(w.p(50)),
                            Stats.ms(w.p(90)), Stats.ms(w.p(99)), Stats.ms(w.p(99.9)), Stats.ms(w.max()),
                            Stats.ms(w.lagP(99)), probe);
                    log.info("steady {}: p50 {} p99 {} max {} ms, errors {}, bad timestamps {}, {}", label,
                            Stats.ms(w.p(50)), Stats.ms(w.p(99)), Stats.ms(w.max()), run.errors(),
                            run.badTimestamps(), run.relay().stats());
                }
            }
            List<String> out = new ArrayList<>();
            out.add("\n## steady\n");
            env.describe().forEach(l -> out.add("- " + l));
            out.addAll(saturation);
            out.add("- producer settings: " + ProducerSettings.effective(common) + ", KafkaTransport mode " + common.mode);
            out.add("- relay lanes=" + lanes + " batch=" + batch + " linger=" + lingerMs + "ms, writers=" + writers + ", warm-up " + warmup
                    + " s (not counted), measured " + duration + " s per rate; outbox table "
                    + (analyze ? "ANALYZEd when the warm-up ended" : "not analyzed (--no-analyze)"));
            out.add("- command: bench steady " + String.join(" ", spec.commandLine().getParseResult().originalArgs()));
            out.add("");
            out.add(t.toString());
            out.add("what the relay cost per event, by rate and model (details below):\n");
            out.add(summary.toString());
            out.addAll(costs);
            System.out.println(String.join("\n", out));
        }
        return 0;
    }
}
