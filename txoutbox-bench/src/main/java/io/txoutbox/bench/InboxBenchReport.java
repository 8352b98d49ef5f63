package io.txoutbox.bench;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/** The markdown report of an {@link InboxBench}: the setup, then per contender its rates against the plain consumer. */
final class InboxBenchReport {

    private InboxBenchReport() {
    }

    /** Prints the report of {@code bench}'s {@code results} (per contender, one run per round) to stdout. */
    static void print(InboxBench bench, Map<String, List<InboxBench.Run>> results, double fillRate,
                      List<String> machine) {
        StringBuilder out = new StringBuilder();
        out.append("\n## inbox\n\n");
        machine.forEach(l -> out.append("- ").append(l).append('\n'));
        out.append("- topic: ").append(bench.events).append(" records, ").append(bench.common.partitions)
                .append(" partitions, ").append(bench.common.keys).append(" keys, ").append(bench.common.payloadBytes)
                .append("-byte JSON values, relay headers; filled at ").append(Stats.fmt(fillRate))
                .append(" records/s (not a contender)\n");
        out.append("- consumer properties (all three consumers): ").append(bench.consumerProperties.isEmpty()
                ? "client defaults (max.poll.records=500), read_committed" : bench.consumerProperties).append('\n');
        out.append("- data source of the inbox contenders: ").append(bench.noPool
                ? "unpooled PGSimpleDataSource (every getConnection() opens a new PostgreSQL connection)"
                : "HikariCP pool, at most " + (bench.lanes + 4) + " connections").append('\n');
        out.append("- command: ").append(command(bench)).append("\n\n");
        List<InboxBench.Run> plain = results.get(InboxBench.PLAIN);
        Stats.Table t = new Stats.Table("contender", "msg/s per round", "÷ plain per round",
                "µs/msg over plain per round", "msg per batch");
        for (Map.Entry<String, List<InboxBench.Run>> en : results.entrySet()) {
            List<InboxBench.Run> rs = en.getValue();
            List<String> rates = new ArrayList<>();
            List<String> ratios = new ArrayList<>();
            List<String> overheads = new ArrayList<>();
            for (int i = 0; i < rs.size(); i++) {
                rates.add(Stats.fmt(rs.get(i).rate()));
                ratios.add(String.format("%.3f", rs.get(i).rate() / plain.get(i).rate()));
                overheads.add(Stats.fmt((1 / rs.get(i).rate() - 1 / plain.get(i).rate()) * 1e6));
            }
            boolean isPlain = en.getKey().equals(InboxBench.PLAIN);
            t.row(en.getKey(), String.join(" / ", rates), isPlain ? "1" : String.join(" / ", ratios),
                    isPlain ? "-" : String.join(" / ", overheads),
                    Stats.fmt(Stats.median(rs.stream().map(r -> (double) r.messages() / r.batches()).toList())));
        }
        out.append(t);
        out.append("\nµs/msg over plain = 1/rate − 1/rate(plain) of the same round: the time each message costs beyond "
                + "reading it.\n");
        System.out.println(out);
    }

    private static String command(InboxBench bench) {
        return "txoutbox-bench/bench.sh " + String.join(" ", bench.spec.commandLine().getParseResult().originalArgs());
    }
}
