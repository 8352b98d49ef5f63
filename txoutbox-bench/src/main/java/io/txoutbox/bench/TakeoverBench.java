package io.txoutbox.bench;

import io.txoutbox.OutboxStatus;
import io.txoutbox.RelayConfig;
import io.txoutbox.testing.process.JvmProcess;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * Steady latency while one of two relay processes is SIGKILLed: the other must take its lanes over, and the
 * latency of the events committed around the kill shows how long and how high the bump is.
 */
@Command(name = "takeover", mixinStandardHelpOptions = true,
        description = "Steady latency with two relay processes, one SIGKILLed mid-run: p99 before, during, after.")
final class TakeoverBench implements Callable<Integer> {

    private static final Logger log = LoggerFactory.getLogger(TakeoverBench.class);

    @Mixin
    CommonOptions common;

    @Spec
    CommandSpec spec;

    @Option(names = "--rate", defaultValue = "1000", description = "events/s (default ${DEFAULT-VALUE})")
    int rate;

    @Option(names = "--before", defaultValue = "20", description = "seconds before the kill (default ${DEFAULT-VALUE})")
    double before;

    @Option(names = "--window", defaultValue = "5", description = "seconds after the kill counted as the takeover (default ${DEFAULT-VALUE})")
    double window;

    @Option(names = "--after", defaultValue = "20", description = "seconds after the takeover window (default ${DEFAULT-VALUE})")
    double after;

    @Option(names = "--warmup", defaultValue = "5", description = "seconds not counted at the start (default ${DEFAULT-VALUE})")
    double warmup;

    @Option(names = "--writers", defaultValue = "8")
    int writers;

    @Option(names = "--lanes", defaultValue = "" + RelayConfig.DEFAULT_LANES)
    int lanes;

    @Option(names = "--batch", defaultValue = "" + RelayConfig.DEFAULT_BATCH_SIZE)
    int batch;

    @Override
    public Integer call() throws Exception {
        if (common.jdbcUrl != null && common.jdbcUrl.isBlank()) {
            throw new IllegalArgumentException("--jdbc-url must not be blank");
        }
        Events gen = new Events(common.keys, common.payloadBytes);
        double killAt = warmup + before;
        double total = killAt + window + after;
        try (BenchEnv env = new BenchEnv(common);
             SteadyRun run = new SteadyRun(env, gen, "takeover_" + rate, rate, total, writers)) {
            String url = env.dataSource().getURL();
            String[] relayArgs = {url, env.dataSource().getUser(), String.valueOf(env.dataSource().getPassword()),
                    run.schema().schema(), env.bootstrapServers(), String.valueOf(lanes), String.valueOf(batch),
                    common.mode.name()};
            List<JvmProcess> relays = new ArrayList<>();
            try {
                JvmProcess a = JvmProcess.builder(RelayProcessMain.class).name("relay-a").args(relayArgs)
                        .jvmArgs("-Xmx512m", "-XX:TieredStopAtLevel=4", "-XX:+UseG1GC").start();
                relays.add(a);
                a.awaitLine("RELAY-LANES " + lanes, Duration.ofMinutes(2));
                JvmProcess b = JvmProcess.builder(RelayProcessMain.class).name("relay-b").args(relayArgs)
                        .jvmArgs("-Xmx512m", "-XX:TieredStopAtLevel=4", "-XX:+UseG1GC").start();
                relays.add(b);
                b.awaitLine("RELAY-LANES " + (lanes / 2), Duration.ofMinutes(2));
                log.info("takeover: two relay processes share {} lanes", lanes);
                run.startExternal();
                sleepUntil(run, killAt);
                long killedAt = System.nanoTime();
                a.kill();
                log.info("takeover: SIGKILLed relay-a (pid {})", a.pid());
                b.awaitLine("RELAY-LANES " + lanes, Duration.ofSeconds(60));
                double takeoverSeconds = (System.nanoTime() - killedAt) / 1e9;
                int owners = (int) OutboxStatus.lanes(env.dataSource(), run.schema()).stream()
                        .map(OutboxStatus.LaneOwner::instanceId).distinct().count();
                run.finish(Duration.ofSeconds(120));
                Stats.Table t = new Stats.Table("phase", "seconds", "achieved events/s", "undelivered", "p50 ms",
                        "p90 ms", "p99 ms", "max ms");
                SteadyRun.Window w1 = run.window(warmup, killAt);
                SteadyRun.Window w2 = run.window(killAt, killAt + window);
                SteadyRun.Window w3 = run.window(killAt + window, Math.max(total, run.lastCommit()));
                row(t, "before (2 relays)", w1);
                row(t, "takeover window (kill + " + Stats.fmt(window) + " s)", w2);
                row(t, "after (1 relay)", w3);
                List<String> out = new ArrayList<>();
                out.add("\n## takeover\n");
                env.describe().forEach(l -> out.add("- " + l));
                out.add("- two relay processes (lanes=" + lanes + " batch=" + batch + ", KafkaTransport mode "
                        + common.mode + ", woken by LISTEN/NOTIFY), writers=" + writers + ", rate " + rate
                        + "/s; relay-a SIGKILLed at " + Stats.fmt(killAt) + " s; phase = when the event committed");
                out.add("- command: bench takeover "
                        + String.join(" ", spec.commandLine().getParseResult().originalArgs()));
                out.add("");
                out.add(t.toString());
                out.add("takeover: relay-b owned all " + lanes + " lanes " + Stats.fmt(takeoverSeconds)
                        + " s after the SIGKILL (bound: leaseTimeout " + RelayConfig.DEFAULT_LEASE_TIMEOUT.toSeconds()
                        + " s; a killed process's sessions end at once); lane owners after: " + owners
                        + " instance(s); p99 takeover / before = " + Stats.fmt((double) w2.p(99) / w1.p(99)));
                System.out.println(String.join("\n", out));
            } finally {
                relays.forEach(JvmProcess::close);
            }
        }
        return 0;
    }

    private static void row(Stats.Table t, String name, SteadyRun.Window w) {
        t.row(name, Stats.fmt(w.seconds()), Stats.fmt(w.achievedRate()), w.undelivered(), Stats.ms(w.p(50)),
                Stats.ms(w.p(90)), Stats.ms(w.p(99)), Stats.ms(w.max()));
    }

    private static void sleepUntil(SteadyRun run, double second) throws InterruptedException {
        double left = second - run.elapsed();
        if (left > 0) {
            Thread.sleep((long) (left * 1000));
        }
    }
}
