package io.txoutbox.bench;

import io.txoutbox.RelayConfig;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
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

/** The steady run while another session holds a transaction (and so the xmin horizon) open for a while. */
@Command(name = "longtx", mixinStandardHelpOptions = true,
        description = "Steady latency before, during and after a long-open transaction holding the xmin horizon.")
final class LongTxBench implements Callable<Integer> {

    private static final Logger log = LoggerFactory.getLogger(LongTxBench.class);

    @Mixin
    CommonOptions common;

    @Spec
    CommandSpec spec;

    @Option(names = "--rate", defaultValue = "5000", description = "events/s (default ${DEFAULT-VALUE})")
    int rate;

    @Option(names = "--before", defaultValue = "20", description = "seconds before (default ${DEFAULT-VALUE})")
    double before;

    @Option(names = "--during", defaultValue = "60", description = "seconds the transaction stays open (default ${DEFAULT-VALUE})")
    double during;

    @Option(names = "--after", defaultValue = "20", description = "seconds after (default ${DEFAULT-VALUE})")
    double after;

    @Option(names = "--warmup", defaultValue = "5", description = "seconds before 'before', not counted (default ${DEFAULT-VALUE})")
    double warmup;

    @Option(names = "--writers", defaultValue = "8")
    int writers;

    @Option(names = "--lanes", defaultValue = "" + RelayConfig.DEFAULT_LANES)
    int lanes;

    @Option(names = "--batch", defaultValue = "" + RelayConfig.DEFAULT_BATCH_SIZE)
    int batch;

    @Override
    public Integer call() throws Exception {
        Events gen = new Events(common.keys, common.payloadBytes);
        double total = warmup + before + during + after;
        double holdFrom = warmup + before;
        double holdTo = holdFrom + during;
        try (BenchEnv env = new BenchEnv(common);
             SteadyRun run = new SteadyRun(env, gen, "longtx_" + rate, rate, total, writers)) {
            run.start(lanes, batch, RelayConfig.DEFAULT_LINGER, true);
            List<String> probes = new ArrayList<>();
            sleepUntil(run, holdFrom);
            probes.add("end of before: " + run.claimProbe(lanes, batch));
            String xid;
            try (Connection holder = env.dataSource().getConnection()) {
                holder.setAutoCommit(false);
                try (Statement st = holder.createStatement(); ResultSet rs = st.executeQuery("SELECT txid_current()")) {
                    rs.next();
                    xid = rs.getString(1);
                }
                log.info("longtx: holding transaction {} open for {} s", xid, during);
                sleepUntil(run, holdFrom + during / 2);
                probes.add("middle of during: " + run.claimProbe(lanes, batch));
                sleepUntil(run, holdTo - 0.5);
                probes.add("end of during: " + run.claimProbe(lanes, batch));
                sleepUntil(run, holdTo);
                holder.rollback();
            }
            log.info("longtx: transaction {} ended", xid);
            run.finish(Duration.ofSeconds(120));
            probes.add("end of after: " + run.claimProbe(lanes, batch));
            Stats.Table t = new Stats.Table("phase", "seconds", "achieved events/s", "undelivered", "p50 ms",
                    "p90 ms", "p99 ms", "max ms", "writer lag p99 ms");
            SteadyRun.Window b = run.window(warmup, holdFrom);
            SteadyRun.Window d = run.window(holdFrom, holdTo);
            SteadyRun.Window a = run.window(holdTo, Math.max(total, run.lastCommit()));
            row(t, "before", b);
            row(t, "during (xmin held)", d);
            row(t, "after", a);
            List<String> out = new ArrayList<>();
            out.add("\n## longtx\n");
            env.describe().forEach(l -> out.add("- " + l));
            out.add("- relay lanes=" + lanes + " batch=" + batch + ", writers=" + writers + ", rate " + rate
                    + "/s, warm-up " + warmup + " s; phase = when the event's transaction committed");
            out.add("- command: bench longtx " + String.join(" ", spec.commandLine().getParseResult().originalArgs()));
            out.add("");
            out.add(t.toString());
            out.add("p99 during / before = " + Stats.fmt((double) d.p(99) / b.p(99)) + " (target <= 2)");
            out.add("");
            probes.forEach(p -> out.add("- " + p));
            System.out.println(String.join("\n", out));
        }
        return 0;
    }

    private static void row(Stats.Table t, String name, SteadyRun.Window w) {
        t.row(name, Stats.fmt(w.seconds()), Stats.fmt(w.achievedRate()), w.undelivered(), Stats.ms(w.p(50)),
                Stats.ms(w.p(90)), Stats.ms(w.p(99)), Stats.ms(w.max()), Stats.ms(w.lagP(99)));
    }

    private static void sleepUntil(SteadyRun run, double second) throws InterruptedException {
        double left = second - run.elapsed();
        if (left > 0) {
            Thread.sleep((long) (left * 1000));
        }
    }
}
