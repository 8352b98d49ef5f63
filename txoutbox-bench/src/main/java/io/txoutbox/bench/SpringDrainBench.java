package io.txoutbox.bench;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * The drain through the Spring Boot starter against the core relay (issue 13: within 5%). Both drain the same
 * backlog the same way ({@link DrainRelayContender}: a fresh outbox table of N committed events, warm-up, timed until
 * every event is marked and read back); one is built with {@code PollingRelay.builder()} as {@code bench drain}
 * builds it, the other by a Spring Boot application context with the starter ({@link StarterRelays}), with the same
 * lanes, batch size and producer settings. Rounds alternate which goes first; a warm-up round is not reported.
 */
@Command(name = "spring-drain", mixinStandardHelpOptions = true,
        description = "Backlog drain: the relay the Spring Boot starter builds vs the core PollingRelay, alternating.")
final class SpringDrainBench implements Callable<Integer>, DrainRun {

    private static final Logger log = LoggerFactory.getLogger(SpringDrainBench.class);

    @Mixin
    CommonOptions common;

    @Spec
    CommandSpec spec;

    @Option(names = "--events", defaultValue = "100000", description = "backlog size (default ${DEFAULT-VALUE})")
    long events;

    @Option(names = "--rounds", defaultValue = "6", description = "reported rounds (default ${DEFAULT-VALUE})")
    int rounds;

    @Option(names = "--warmup-rounds", defaultValue = "1",
            description = "rounds run first and not reported (default ${DEFAULT-VALUE})")
    int warmupRounds;

    @Option(names = "--relay", defaultValue = "4x2000",
            description = "LANESxBATCH of both relays (default ${DEFAULT-VALUE})")
    String relay;

    private BenchEnv env;
    private Events gen;

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

    @Override
    public Integer call() throws Exception {
        gen = new Events(common.keys, common.payloadBytes);
        String[] p = relay.trim().toLowerCase(Locale.ROOT).split("x");
        if (p.length != 2) {
            throw new IllegalArgumentException("--relay must be LANESxBATCH, e.g. 4x2000, was '" + relay + "'");
        }
        int lanes = Integer.parseInt(p[0]);
        int batch = Integer.parseInt(p[1]);
        DrainRelayContender core = new DrainRelayContender(this, 1, lanes, batch);
        DrainRelayContender starter = new DrainRelayContender(this, "starter lanes=" + lanes + " batch=" + batch,
                lanes, new StarterRelays(this, lanes, batch));
        List<DrainBench.Result> coreResults = new ArrayList<>();
        List<DrainBench.Result> starterResults = new ArrayList<>();
        try (BenchEnv e = new BenchEnv(common, false, true)) {
            env = e;
            for (int round = -warmupRounds; round < rounds; round++) {
                boolean coreFirst = Math.floorMod(round, 2) == 0;
                DrainRelayContender[] order = coreFirst ? new DrainRelayContender[] {core, starter}
                        : new DrainRelayContender[] {starter, core};
                String label = round < 0 ? "warm-up " + (round + warmupRounds + 1) + "/" + warmupRounds
                        : "round " + (round + 1) + "/" + rounds;
                for (int k = 0; k < 2; k++) {
                    DrainRelayContender c = order[k];
                    String id = (round < 0 ? "w" + (round + warmupRounds + 1) : "r" + (round + 1)) + "_" + k;
                    log.info("{}: {} ... (load {})", label, c.name(), BenchEnv.loadAverage());
                    DrainBench.Result r = c.run(id);
                    log.info("{}: {}: {} events in {} s = {} events/s, relay {} µs/event", label, c.name(), r.events(),
                            String.format(Locale.ROOT, "%.2f", r.seconds()), Stats.fmt(r.rate()),
                            Stats.fmt(r.cost().relayMicrosPerEvent()));
                    if (round >= 0) {
                        (c == core ? coreResults : starterResults).add(r);
                    }
                }
            }
            report(core.name(), starter.name(), coreResults, starterResults, e.describe());
        }
        return 0;
    }

    private void report(String coreName, String starterName, List<DrainBench.Result> core,
            List<DrainBench.Result> starter, List<String> machine) {
        StringBuilder out = new StringBuilder("\n## spring-drain\n\n");
        machine.forEach(l -> out.append("- ").append(l).append('\n'));
        CostReport coreCost = core.stream().map(DrainBench.Result::cost).reduce(CostReport::plus).orElseThrow();
        CostReport starterCost = starter.stream().map(DrainBench.Result::cost).reduce(CostReport::plus).orElseThrow();
        out.append("- ").append(coreName).append(": ").append(coreCost.saturationLine()).append('\n');
        out.append("- ").append(starterName).append(": ").append(starterCost.saturationLine()).append('\n');
        out.append("- producer settings (both): ").append(KafkaTransports.properties(ProducerSettings.effective(common),
                common)).append(", mode ").append(common.mode).append('\n');
        out.append("- command: txoutbox-bench/bench.sh ")
                .append(String.join(" ", spec.commandLine().getParseResult().originalArgs())).append("\n\n");
        Stats.Table t = new Stats.Table("round", "first", "core events/s", "starter events/s", "starter/core",
                "core relay µs/event", "starter relay µs/event", "starter/core CPU", "checks");
        List<Double> ratios = new ArrayList<>();
        List<Double> cpuRatios = new ArrayList<>();
        for (int i = 0; i < core.size(); i++) {
            DrainBench.Result c = core.get(i);
            DrainBench.Result s = starter.get(i);
            double ratio = s.rate() / c.rate();
            double cpu = s.cost().relayMicrosPerEvent() / c.cost().relayMicrosPerEvent();
            ratios.add(ratio);
            cpuRatios.add(cpu);
            boolean ok = c.reachedEnd() && s.reachedEnd() && c.notPublished() <= 0 && s.notPublished() <= 0;
            t.row(i + 1, i % 2 == 0 ? "core" : "starter", Stats.fmt(c.rate()), Stats.fmt(s.rate()),
                    String.format(Locale.ROOT, "%.3f", ratio), Stats.fmt(c.cost().relayMicrosPerEvent()),
                    Stats.fmt(s.cost().relayMicrosPerEvent()), String.format(Locale.ROOT, "%.3f", cpu),
                    ok ? "all read, all marked" : "**FAILED**");
        }
        out.append(t).append('\n');
        out.append(String.format(Locale.ROOT, "median events/s: core %s, starter %s%n",
                Stats.fmt(Stats.median(core.stream().map(DrainBench.Result::rate).toList())),
                Stats.fmt(Stats.median(starter.stream().map(DrainBench.Result::rate).toList()))));
        out.append(String.format(Locale.ROOT, "starter/core events/s: median %.3f (min %.3f, max %.3f) over %d"
                        + " rounds%n", Stats.median(ratios), Stats.min(ratios), Stats.max(ratios), ratios.size()));
        out.append(String.format(Locale.ROOT, "starter/core relay CPU per event: median %.3f (min %.3f, max %.3f)%n",
                Stats.median(cpuRatios), Stats.min(cpuRatios), Stats.max(cpuRatios)));
        appendCost(out, coreName, coreCost);
        appendCost(out, starterName, starterCost);
        System.out.println(out);
    }

    private static void appendCost(StringBuilder out, String name, CostReport cost) {
        out.append("\n### what the relay cost: ").append(name).append(" (drain windows of all reported rounds)\n\n");
        cost.lines().forEach(l -> out.append(l).append('\n'));
    }
}
