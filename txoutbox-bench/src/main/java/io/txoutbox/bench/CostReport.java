package io.txoutbox.bench;

import static io.txoutbox.bench.CpuRules.BROKER;
import static io.txoutbox.bench.CpuRules.CONSUMER;
import static io.txoutbox.bench.CpuRules.OTHER_PRODUCERS;
import static io.txoutbox.bench.CpuRules.PG_RELAY_LANES;
import static io.txoutbox.bench.CpuRules.PG_RELAY_OTHER;
import static io.txoutbox.bench.CpuRules.PG_WRITERS;
import static io.txoutbox.bench.CpuRules.RELAY_HELPERS;
import static io.txoutbox.bench.CpuRules.RELAY_LANES;
import static io.txoutbox.bench.CpuRules.RELAY_PRODUCERS;
import static io.txoutbox.bench.CpuRules.WRITERS;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;

/**
 * What a relay costs in one measured window, as report lines: the machine's load and saturation, CPU by component
 * per delivered event, events and round trips per batch, WAL and dead tuples per event (the outbox table's and its
 * progress table's: both are the relay's writes).
 *
 * @param published events the relay published in the window
 * @param batches batches it sent in the window
 * @param writerEvents events the writers committed in the window (for the writers' WAL per event; 0: not measured
 *     here)
 * @param writerWalBytes the writers' WAL when measured apart (drain's write phase), else {@code -1}: from
 *     {@code pg_stat_statements}
 */
record CostReport(CpuMeter.Result cpu, PgCost.Delta pg, long published, long batches, long writerEvents,
                  long writerWalBytes) {

    static final String[] RELAY_THREADS = {RELAY_LANES, RELAY_HELPERS, RELAY_PRODUCERS};
    static final String[] RELAY_BACKENDS = {PG_RELAY_LANES, PG_RELAY_OTHER};

    /** Microseconds per event of a CPU time in nanoseconds; NaN without events. */
    static double microsPerEvent(long nanos, long events) {
        return events <= 0 ? Double.NaN : nanos / 1e3 / events;
    }

    /** Cores used: CPU seconds per wall second. */
    static double cores(long nanos, double wallSeconds) {
        return wallSeconds <= 0 ? Double.NaN : nanos / 1e9 / wallSeconds;
    }

    /** Two windows together (drain rounds). */
    CostReport plus(CostReport o) {
        return new CostReport(cpu.plus(o.cpu), pg.plus(o.pg), published + o.published, batches + o.batches,
                writerEvents + o.writerEvents, writerWalBytes < 0 || o.writerWalBytes < 0 ? -1
                : writerWalBytes + o.writerWalBytes);
    }

    long relayThreadNanos() {
        return cpu.threads(RELAY_THREADS);
    }

    long relayBackendNanos() {
        return cpu.backends(RELAY_BACKENDS);
    }

    /** Relay threads + the relay's own backends, per published event: the headline figure. */
    double relayMicrosPerEvent() {
        return cpu.backendsMeasured() ? microsPerEvent(relayThreadNanos() + relayBackendNanos(), published)
                : Double.NaN;
    }

    /** Load generator (writers and their sessions, read-back consumer, other producers) plus the broker. */
    long loadAndBrokerNanos() {
        long broker = cpu.brokerNanos() >= 0 ? cpu.brokerNanos() : cpu.threads(BROKER);
        return cpu.threads(WRITERS, CONSUMER, OTHER_PRODUCERS) + cpu.backends(PG_WRITERS) + broker;
    }

    /** Why the window does not measure the relay alone, or null: machine ≥ 90% busy, load + broker > 1/3. */
    String saturation() {
        List<String> why = new ArrayList<>();
        if (cpu.machineBusy() >= 0.9) {
            why.add(String.format("the machine was %.0f%% busy (≥ 90%% of %d cores)", cpu.machineBusy() * 100,
                    cpu.cpus()));
        }
        double lb = cores(loadAndBrokerNanos(), cpu.wallSeconds());
        if (lb > cpu.cpus() / 3.0) {
            why.add(String.format("load generator + broker used %.2f cores (> a third of %d)", lb, cpu.cpus()));
        }
        return why.isEmpty() ? null : String.join("; ", why);
    }

    double eventsPerBatch() {
        return batches == 0 ? Double.NaN : (double) published / batches;
    }

    double roundTripsPerBatch() {
        // pgjdbc sends BEGIN with the next statement; the COMMIT that ends each transaction is a round trip of its
        // own but pg_stat_statements does not list it: one per BEGIN
        return !pg.statementsKnown() || batches == 0 ? Double.NaN
                : (double) (pg.relayStatements() + pg.relayBegins()) / batches;
    }

    double relayWalPerEvent() {
        return !pg.statementsKnown() || published == 0 ? Double.NaN : (double) pg.relayWalBytes() / published;
    }

    double writerWalPerEvent() {
        long bytes = writerWalBytes >= 0 ? writerWalBytes : pg.statementsKnown() ? pg.writerWalBytes() : -1;
        return bytes < 0 || writerEvents <= 0 ? Double.NaN : (double) bytes / writerEvents;
    }

    /** Dead row versions the relay made per event: the outbox table's, and its progress table's (cursor model). */
    double deadPerEvent() {
        return published == 0 ? Double.NaN : (double) (pg.deadMade() + pg.progressUpdates()) / published;
    }

    /** Dead tuples per event with four decimals: the cursor model's are a few per batch, not 0.00. */
    private static String dead(double perEvent) {
        return Double.isNaN(perEvent) ? "-" : String.format("%.4f", perEvent);
    }

    /** The progress table's updates per batch (the cursor model's advances), and which share of them were HOT. */
    String progressUpdates() {
        return String.format("%s/batch (%s HOT)", Stats.fmt(batches == 0 ? Double.NaN
                : (double) pg.progressUpdates() / batches), pg.progressUpdates() == 0 ? "-"
                : String.format("%.0f%%", 100.0 * pg.progressHotUpdates() / pg.progressUpdates()));
    }

    /** The columns of {@link #summaryRow}: one row per window or contender, to compare them side by side. */
    static Stats.Table summaryTable(String what) {
        return new Stats.Table(what, "events", "relay WAL B/event", "dead tuples/event", "progress table updates",
                "relay µs/event", "threads µs/event", "backends µs/event", "round trips/batch", "events/batch",
                "saturated");
    }

    void summaryRow(Stats.Table t, String name) {
        t.row(name, published, Stats.fmt(relayWalPerEvent()), dead(deadPerEvent()), progressUpdates(),
                Stats.fmt(relayMicrosPerEvent()), Stats.fmt(microsPerEvent(relayThreadNanos(), published)),
                Stats.fmt(cpu.backendsMeasured() ? microsPerEvent(relayBackendNanos(), published) : Double.NaN),
                Stats.fmt(roundTripsPerBatch()), Stats.fmt(eventsPerBatch()), saturation() == null ? "no" : "YES");
    }

    /** SATURATED and why, or the figures that say it was not. */
    String saturationLine() {
        String sat = saturation();
        return sat != null ? "**SATURATED**: " + sat + " — the relay's figures are not its own"
                : String.format("not saturated: machine %.0f%% busy (< 90%%), load generator + broker %.2f cores"
                        + " (≤ a third of %d)", cpu.machineBusy() * 100,
                        cores(loadAndBrokerNanos(), cpu.wallSeconds()), cpu.cpus());
    }

    /** The header lines: load, saturation, batches, WAL, dead tuples. */
    List<String> header() {
        List<String> l = new ArrayList<>();
        l.add(saturationLine());
        l.add(String.format("CPU window %.1f s, nproc %d, load average %s at start, %s at end", cpu.wallSeconds(),
                cpu.cpus(), cpu.loadStart(), cpu.loadEnd()));
        l.add(String.format("relay: %d events in %d batches = %s events/batch; %s round trips/batch (%s)", published,
                batches, Stats.fmt(eventsPerBatch()), Stats.fmt(roundTripsPerBatch()), pg.statementsKnown()
                        ? "pg_stat_statements calls of role " + BenchEnv.RELAY_ROLE + " but BEGIN, which pgjdbc sends"
                        + " with the next statement, plus one COMMIT per BEGIN, which pg_stat_statements does not"
                        + " list: "
                        + Stats.fmt(batches == 0 ? Double.NaN : (double) pg.relayBegins() / batches)
                        + " transactions/batch"
                        : "pg_stat_statements not loaded: not measured"));
        l.add(String.format("WAL: relay %s B/event (wal_bytes of role %s's statements), writers %s B/event (%s),"
                        + " all WAL %s B/published event (pg_current_wal_lsn: with commit records, vacuum,"
                        + " checkpoints)", Stats.fmt(relayWalPerEvent()), BenchEnv.RELAY_ROLE,
                Stats.fmt(writerWalPerEvent()), writerWalBytes >= 0 ? "pg_current_wal_lsn over the write phase"
                        : "wal_bytes of the other roles' statements over " + writerEvents + " INSERTs",
                Stats.fmt(published == 0 ? Double.NaN : (double) pg.walBytes() / published)));
        l.add(String.format("dead tuples: %s/event made by the relay (n_tup_upd + n_tup_del of the outbox table %s/event,"
                        + " n_tup_upd of its progress table %s/event), n_dead_tup of the outbox %+d (autovacuum lowers"
                        + " it); progress table updates %s",
                dead(deadPerEvent()), dead(published == 0 ? Double.NaN : (double) pg.deadMade() / published),
                dead(published == 0 ? Double.NaN : (double) pg.progressUpdates() / published), pg.deadDelta(),
                progressUpdates()));
        l.add(String.format("ended within the window: %d of %d threads, %d of %d backends (counted up to their last"
                        + " 1-s sample); in the window they used %s CPU s (from the postmaster's reaped children), %.2f"
                        + " s of it sampled into their groups below", cpu.threadsEnded(), cpu.threadsSeen(),
                cpu.backendsEnded(), cpu.backendsSeen(), cpu.endedBackendNanos() < 0 ? "?"
                        : String.format("%.2f", cpu.endedBackendNanos() / 1e9), cpu.endedSampledNanos() / 1e9));
        return l;
    }

    /** CPU by component: CPU s, cores, µs per published event. */
    Stats.Table cpuTable() {
        Stats.Table t = new Stats.Table("component", "CPU s", "cores", "µs/event");
        row(t, "**relay total** (threads + backends)",
                cpu.backendsMeasured() ? relayThreadNanos() + relayBackendNanos() : -1);
        row(t, "relay threads", relayThreadNanos());
        for (String c : RELAY_THREADS) {
            row(t, "  " + c, cpu.threads(c));
        }
        row(t, "relay backends", cpu.backendsMeasured() ? relayBackendNanos() : -1);
        for (String g : RELAY_BACKENDS) {
            row(t, "  " + g, cpu.backendsMeasured() ? cpu.backends(g) : -1);
        }
        cpu.threads().entrySet().stream().filter(e -> !List.of(RELAY_THREADS).contains(e.getKey()))
                .sorted(Map.Entry.<String, Long>comparingByValue(Comparator.reverseOrder()))
                .forEach(e -> row(t, "thread: " + e.getKey(), e.getValue()));
        cpu.backends().entrySet().stream().filter(e -> !List.of(RELAY_BACKENDS).contains(e.getKey()))
                .sorted(Map.Entry.<String, Long>comparingByValue(Comparator.reverseOrder()))
                .forEach(e -> row(t, "postgres: " + e.getKey(), e.getValue()));
        row(t, "this JVM as a whole (process CPU; threads above: "
                + Stats.fmt(100.0 * cpu.threads().values().stream().mapToLong(Long::longValue).sum()
                / Math.max(1, cpu.jvmNanos())) + "% of it)", cpu.jvmNanos());
        if (cpu.brokerNanos() >= 0) {
            row(t, "broker process", cpu.brokerNanos());
        }
        return t;
    }

    /**
     * The relay's statements per batch, most frequent first, with their execution time ({@code total_exec_time}:
     * planning, parse and bind apart) per call and per batch.
     */
    Stats.Table statementTable() {
        Stats.Table t = new Stats.Table("relay statement", "per batch", "exec µs per call", "exec µs per batch");
        pg.relayCallsByQuery().entrySet().stream()
                .sorted(Map.Entry.<String, Long>comparingByValue(Comparator.reverseOrder())).limit(8)
                .forEach(e -> {
                    long exec = pg.relayExecMicrosByQuery().getOrDefault(e.getKey(), 0L);
                    t.row(e.getKey().replace("|", "\\|"),
                            Stats.fmt(batches == 0 ? Double.NaN : (double) e.getValue() / batches),
                            Stats.fmt(e.getValue() == 0 ? Double.NaN : (double) exec / e.getValue()),
                            Stats.fmt(batches == 0 ? Double.NaN : (double) exec / batches));
                });
        t.row("COMMIT (one per BEGIN; pg_stat_statements does not list it)",
                Stats.fmt(batches == 0 ? Double.NaN : (double) pg.relayBegins() / batches), "-", "-");
        return t;
    }

    private void row(Stats.Table t, String name, long nanos) {
        if (nanos < 0) {
            t.row(name, "-", "-", "-");
            return;
        }
        t.row(name, String.format("%.2f", nanos / 1e9), String.format("%.3f", cores(nanos, cpu.wallSeconds())),
                Stats.fmt(microsPerEvent(nanos, published)));
    }

    /** All lines of the cost section. */
    List<String> lines() {
        List<String> l = new ArrayList<>();
        header().forEach(h -> l.add("- " + h));
        l.add("");
        l.add(cpuTable().toString());
        if (pg.statementsKnown()) {
            l.add(statementTable().toString());
        }
        return l;
    }
}
