package io.txoutbox.bench;

import io.txoutbox.Outbox;
import io.txoutbox.OutboxMessage;
import io.txoutbox.OutboxRetention;
import io.txoutbox.OutboxSchema;
import io.txoutbox.RetentionConfig;
import io.txoutbox.testing.postgres.TestPostgres;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import javax.sql.DataSource;
import org.postgresql.ds.PGSimpleDataSource;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * Retention against a write load: writers commit one event per transaction for a while alone, then while
 * {@link OutboxRetention} removes a backlog of old published rows — by batched deletes from a plain table, or by
 * dropping the old partitions of a time-partitioned one, side by side in each round. Reports rows removed per second,
 * the writers' commit rate with and without the retention running, and their slowest commit during the run.
 * PostgreSQL only (no broker, no relay).
 */
@Command(name = "retention", mixinStandardHelpOptions = true,
        description = "Retention (rows/s removed) and its cost to a concurrent write load, plain and partitioned.")
final class RetentionBench implements Callable<Integer> {

    @Option(names = "--jdbc-url", description = "PostgreSQL to use instead of an embedded one (fsync=off)")
    String jdbcUrl;

    @Option(names = "--jdbc-user", defaultValue = "postgres")
    String jdbcUser;

    @Option(names = "--rows", defaultValue = "1000000", description = "old published rows to delete (default ${DEFAULT-VALUE})")
    int rows;

    @Option(names = "--writers", defaultValue = "4", description = "writer threads (default ${DEFAULT-VALUE})")
    int writers;

    @Option(names = "--seconds", defaultValue = "15", description = "length of the writers-alone phase (default ${DEFAULT-VALUE})")
    int seconds;

    @Option(names = "--batch-size", defaultValue = "" + RetentionConfig.DEFAULT_BATCH_SIZE)
    int batchSize;

    @Option(names = "--pause-ms", defaultValue = "20", description = "pause between batches (default ${DEFAULT-VALUE})")
    int pauseMs;

    @Option(names = "--rounds", defaultValue = "2")
    int rounds;

    @Option(names = "--payload-bytes", defaultValue = "300")
    int payloadBytes;

    @Option(names = "--layout", split = ",", defaultValue = "delete,partitions",
            description = "delete (plain table, batched deletes), partitions (daily partitions dropped); default ${DEFAULT-VALUE}")
    List<String> layouts;

    /** The old rows' event ids: UUIDv7s of 10 to 7 days ago, spread evenly, made by the database. */
    private String oldEventId() {
        long spanMs = Duration.ofDays(3).toMillis();
        return Backlog.uuidV7At("(extract(epoch FROM now() - interval '10 days') * 1000)::bigint + (g::bigint * "
                + spanMs + ") / " + rows);
    }

    @Override
    public Integer call() throws Exception {
        TestPostgres embedded = null;
        DataSource ds;
        if (jdbcUrl == null) {
            embedded = TestPostgres.startEmbedded();
            ds = embedded.dataSource();
        } else {
            PGSimpleDataSource p = new PGSimpleDataSource();
            p.setURL(jdbcUrl);
            p.setUser(jdbcUser);
            ds = p;
        }
        String load = BenchEnv.loadAverage();
        System.out.printf("retention: rows=%d writers=%d seconds=%d batchSize=%d pause=%dms payload=%dB; load %s%n",
                rows, writers, seconds, batchSize, pauseMs, payloadBytes, load);
        System.out.println("| round | layout | writers alone (commits/s) | during the run (commits/s) | drop |"
                + " first 5 s from the run's start (commits/s) | drop | slowest commit during the run (ms) |"
                + " rows removed | run s | rows/s removed |");
        System.out.println("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
        try {
            for (int round = 1; round <= rounds; round++) {
              for (String layout : layouts) {
                boolean partitioned = layout.trim().equals("partitions");
                String name = "bench_retention_" + round + "_" + (partitioned ? "p" : "d");
                try (Connection c = ds.getConnection(); Statement st = c.createStatement()) {
                    st.execute("DROP SCHEMA IF EXISTS " + name + " CASCADE");
                }
                OutboxSchema schema = partitioned ? Backlog.backdatedPartitionedSchema(ds, name)
                        : OutboxSchema.builder().schema(name).build();
                schema.migrate(ds);
                String t = schema.qualifiedOutboxTable();
                String payload = "{\"p\":\"" + "x".repeat(Math.max(0, payloadBytes - 8)) + "\"}";
                try (Connection c = ds.getConnection(); Statement st = c.createStatement()) {
                    st.execute("INSERT INTO " + t + " (event_id, topic, partition_key, aggregate_type, aggregate_id,"
                            + " event_type, payload, state, created_at, published_at) SELECT " + oldEventId()
                            + ", 'orders', 'k-' || (g % 1000), 'Order', g::text, 'E', '" + payload + "'::jsonb,"
                            + " 'PUBLISHED', now() - interval '10 days', now() - interval '10 days'"
                            + " FROM generate_series(1, " + rows + ") g");
                    st.execute("VACUUM ANALYZE " + t);
                }
                String oldRows = "SELECT count(*) FROM " + t + " WHERE created_at < now() - interval '1 day'";
                Outbox outbox = Outbox.builder().schema(schema).build();
                AtomicLong commits = new AtomicLong();
                AtomicLong slowestNanos = new AtomicLong();
                AtomicBoolean stop = new AtomicBoolean();
                ExecutorService pool = Executors.newFixedThreadPool(writers);
                List<Future<?>> running = new ArrayList<>();
                for (int w = 0; w < writers; w++) {
                    running.add(pool.submit(() -> {
                        try (Connection c = ds.getConnection()) {
                            c.setAutoCommit(false);
                            while (!stop.get()) {
                                long s0 = System.nanoTime();
                                outbox.publish(c, OutboxMessage.builder().topic("orders").key("live")
                                        .aggregate("Order", "1").eventType("Live").jsonPayload(payload).build());
                                c.commit();
                                slowestNanos.accumulateAndGet(System.nanoTime() - s0, Math::max);
                                commits.incrementAndGet();
                            }
                        }
                        return null;
                    }));
                }
                long c0 = commits.get();
                long t0 = System.nanoTime();
                Thread.sleep(seconds * 1000L);
                double alone = (commits.get() - c0) / ((System.nanoTime() - t0) / 1e9);

                OutboxRetention retention = OutboxRetention.builder().dataSource(ds).schema(schema)
                        .batchSize(batchSize).pauseBetweenBatches(Duration.ofMillis(pauseMs)).build();
                long before = scalar(ds, oldRows);
                long c1 = commits.get();
                slowestNanos.set(0);
                long t1 = System.nanoTime();
                // the writers' commits in the 5 s from the run's start: comparable between a run of milliseconds
                // (partitions dropped) and one of many seconds (batched deletes)
                java.util.concurrent.CompletableFuture<Long> at5s = java.util.concurrent.CompletableFuture.supplyAsync(
                        commits::get, java.util.concurrent.CompletableFuture.delayedExecutor(5, TimeUnit.SECONDS));
                retention.deleteOlderThan(Instant.now().minus(Duration.ofDays(1)));
                double secs = (System.nanoTime() - t1) / 1e9;
                double during = (commits.get() - c1) / secs;
                double first5s = (at5s.get() - c1) / 5.0;
                double slowestMs = slowestNanos.get() / 1e6;
                long removed = before - scalar(ds, oldRows);
                stop.set(true);
                for (Future<?> f : running) {
                    f.get();
                }
                pool.shutdown();
                System.out.printf("| %d | %s | %.0f | %.0f | %.1f%% | %.0f | %.1f%% | %.0f | %d | %.2f | %.0f |%n", round,
                        partitioned ? "partitions dropped" : "batched deletes", alone, during,
                        100.0 * (alone - during) / alone, first5s, 100.0 * (alone - first5s) / alone, slowestMs,
                        removed, secs, removed / secs);
                try (Connection c = ds.getConnection(); Statement st = c.createStatement()) {
                    st.execute("DROP SCHEMA " + schema.schema() + " CASCADE");
                }
              }
            }
            System.out.println("load at end " + BenchEnv.loadAverage());
            System.out.println("A partitioned run is over in a fraction of a second, so its 'during the run' rate covers few"
                    + " commits; the 5 s window and the slowest commit (what a writer waited, e.g. for the drop's"
                    + " exclusive lock) compare the layouts.");
        } finally {
            if (embedded != null) {
                embedded.close();
            }
        }
        return 0;
    }

    private static long scalar(DataSource ds, String sql) throws Exception {
        try (Connection c = ds.getConnection(); Statement st = c.createStatement(); ResultSet rs = st.executeQuery(sql)) {
            rs.next();
            return rs.getLong(1);
        }
    }
}
