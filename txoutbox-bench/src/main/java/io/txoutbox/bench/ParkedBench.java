package io.txoutbox.bench;

import io.txoutbox.OutboxSchema;
import io.txoutbox.PollingRelay;
import io.txoutbox.spi.RelayListener;
import io.txoutbox.spi.SendResult;
import io.txoutbox.testing.postgres.TestPostgres;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicLong;
import javax.sql.DataSource;
import org.postgresql.ds.PGSimpleDataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * The relay's claim time against the number of parked keys in its lane (issue 11, item 4): for each count, a fresh
 * table gets that many parked heads (one PARKED row per key, as a mass park leaves them), then a backlog of healthy
 * events, which one relay lane drains to a transport that acknowledges at once. The claim time is the lane's, per
 * batch ({@link RelayListener#batchCompleted}: the floor's check, the reads before the claim, the claim and its
 * commit). PostgreSQL only: no broker is involved.
 */
@Command(name = "parked", mixinStandardHelpOptions = true,
        description = "Claim time (median, p99) against the number of parked keys in the lane; PostgreSQL only.")
final class ParkedBench implements Callable<Integer> {

    private static final Logger log = LoggerFactory.getLogger(ParkedBench.class);

    @Spec
    CommandSpec spec;

    @Option(names = "--jdbc-url", description = "PostgreSQL to use instead of an embedded one (fsync=off)")
    String jdbcUrl;

    @Option(names = "--jdbc-user", defaultValue = "postgres")
    String jdbcUser;

    @Option(names = "--jdbc-password", defaultValue = "")
    String jdbcPassword;

    @Option(names = "--parked", split = ",", defaultValue = "0,1000,10000,100000,200000",
            description = "parked keys per run (default ${DEFAULT-VALUE})")
    int[] parked;

    @Option(names = "--events", defaultValue = "50000", description = "healthy backlog per run (default ${DEFAULT-VALUE})")
    int events;

    @Option(names = "--batch-size", defaultValue = "500", description = "relay batch size (default ${DEFAULT-VALUE})")
    int batchSize;

    @Option(names = "--shards", defaultValue = "64", description = "shards of the table (default ${DEFAULT-VALUE})")
    int shards;

    @Override
    public Integer call() throws Exception {
        TestPostgres embedded = jdbcUrl == null ? TestPostgres.startEmbedded() : null;
        DataSource ds;
        if (embedded != null) {
            ds = embedded.dataSource();
        } else {
            PGSimpleDataSource p = new PGSimpleDataSource();
            p.setURL(jdbcUrl);
            p.setUser(jdbcUser);
            p.setPassword(jdbcPassword);
            ds = p;
        }
        String load = BenchEnv.loadAverage();
        try {
            Stats.Table t = new Stats.Table("parked keys", "batches", "claim median ms", "claim p99 ms",
                    "claim max ms", "drain s");
            for (int n : parked) {
                t.row(run(ds, n));
            }
            List<String> out = new ArrayList<>();
            out.add("\n## parked\n");
            out.add("- date: " + java.time.ZonedDateTime.now() + ", cpus (nproc): "
                    + Runtime.getRuntime().availableProcessors() + ", load average at start / at report: " + load
                    + " / " + BenchEnv.loadAverage());
            out.add("- postgresql: " + query(ds, "SHOW server_version")
                    + (embedded != null ? " (embedded: fsync=off)" : " (" + jdbcUrl + ")"));
            out.add("- one relay lane (all " + shards + " shards), batch " + batchSize + ", " + events
                    + " healthy events per run written before the relay starts; the parked heads are in the lane's"
                    + " shards, analyzed; claim = the lane's time from the floor check to the claim's commit");
            out.add("- command: bench " + String.join(" ", spec.commandLine().getParseResult().originalArgs()));
            out.add("");
            out.add(t.toString());
            System.out.println(String.join("\n", out));
        } finally {
            if (embedded != null) {
                embedded.close();
            }
        }
        return 0;
    }

    private Object[] run(DataSource ds, int n) throws Exception {
        OutboxSchema schema = OutboxSchema.builder().schema("bench_parked").outboxTable("parked_" + n).shards(shards)
                .build();
        String table = schema.qualifiedOutboxTable();
        schema.migrate(ds);
        try (Connection c = ds.getConnection(); Statement st = c.createStatement()) {
            st.execute("TRUNCATE " + table);
            st.execute("INSERT INTO " + table + " (topic, partition_key, aggregate_type, aggregate_id, event_type,"
                    + " payload, state, attempts, last_error, failed_at) SELECT 'gone', 'parked-' || g, 'Order',"
                    + " 'parked-' || g, 'E', '{}'::jsonb, 'PARKED', 1, 'topic gone', now()"
                    + " FROM generate_series(1, " + n + ") g");
            st.execute("INSERT INTO " + table + " (topic, partition_key, aggregate_type, aggregate_id, event_type,"
                    + " payload) SELECT 'orders', 'healthy-' || (g % 1000), 'Order', 'healthy-' || g, 'E',"
                    + " ('{\"n\": ' || g || '}')::jsonb FROM generate_series(1, " + events + ") g");
            st.execute("ANALYZE " + table);
        }
        ConcurrentLinkedQueue<Long> claims = new ConcurrentLinkedQueue<>();
        AtomicLong delivered = new AtomicLong();
        RelayListener listener = new RelayListener() {
            @Override
            public void batchCompleted(int size, long claimNanos, long sendNanos, long markNanos) {
                claims.add(claimNanos);
            }
        };
        long t0 = System.nanoTime();
        try (PollingRelay relay = PollingRelay.builder().dataSource(ds).schema(schema).lanes(1).batchSize(batchSize)
                .pollInterval(Duration.ofMillis(20)).listener(listener)
                .transport((lane, batch) -> {
                    delivered.addAndGet(batch.size());
                    List<SendResult> ok = new ArrayList<>(batch.size());
                    for (int i = 0; i < batch.size(); i++) {
                        ok.add(new SendResult.Delivered(0, i));
                    }
                    return CompletableFuture.completedFuture(ok);
                }).build()) {
            relay.start();
            long deadline = System.nanoTime() + Duration.ofMinutes(10).toNanos();
            while (delivered.get() < events) {
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException(n + " parked: only " + delivered.get() + " of " + events
                            + " events delivered in 10 min");
                }
                Thread.sleep(5);
            }
        }
        double drainSeconds = (System.nanoTime() - t0) / 1e9;
        long[] micros = claims.stream().mapToLong(x -> x / 1_000).sorted().toArray();
        try (Connection c = ds.getConnection(); Statement st = c.createStatement()) {
            st.execute("TRUNCATE " + table);
        }
        log.info("parked {}: {} batches, claim µs sorted {}", n, micros.length,
                micros.length > 20 ? Arrays.toString(Arrays.copyOfRange(micros, micros.length - 5, micros.length))
                        : Arrays.toString(micros));
        return new Object[] {n, micros.length, Stats.ms(Stats.percentile(micros, 50)),
                Stats.ms(Stats.percentile(micros, 99)), Stats.ms(micros[micros.length - 1]),
                Stats.fmt(drainSeconds)};
    }

    private static String query(DataSource ds, String sql) throws Exception {
        try (Connection c = ds.getConnection(); Statement st = c.createStatement(); ResultSet rs = st.executeQuery(sql)) {
            rs.next();
            return rs.getString(1);
        }
    }
}
