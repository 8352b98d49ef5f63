package io.txoutbox.bench;

import io.txoutbox.OutboxSchema;

/** A measured window of {@link CostReport}: CPU sampling and the database's counters, opened and closed together. */
final class CostWindow {

    private final BenchEnv env;
    private final OutboxSchema schema;
    private final CpuMeter cpu;
    private final PgCost.Snapshot start;

    private CostWindow(BenchEnv env, OutboxSchema schema) {
        this.env = env;
        this.schema = schema;
        this.start = PgCost.snapshot(env.dataSource(), schema, env.hasRelayRole());
        this.cpu = new CpuMeter(env.isEmbeddedPostgres() ? env.dataSource() : null, env.brokerPid()).start();
    }

    static CostWindow open(BenchEnv env, OutboxSchema schema) {
        return new CostWindow(env, schema);
    }

    /** Ends the CPU window now; reads the database's counters after {@code statsWaitMillis} (their flush lag). */
    CostReport close(long published, long batches, long writerEvents, long writerWalBytes, long statsWaitMillis)
            throws InterruptedException {
        CpuMeter.Result r = cpu.stop();
        Thread.sleep(statsWaitMillis);
        PgCost.Delta d = PgCost.delta(env.dataSource(), start, PgCost.snapshot(env.dataSource(), schema,
                env.hasRelayRole()));
        return new CostReport(r, d, published, batches, writerEvents >= 0 ? writerEvents : d.writerInserts(),
                writerWalBytes);
    }
}
