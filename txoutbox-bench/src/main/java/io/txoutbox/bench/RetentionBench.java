package io.txoutbox.bench;

import io.txoutbox.Outbox;
import io.txoutbox.OutboxMessage;
import io.txoutbox.OutboxRetention;
import io.txoutbox.OutboxSchema;
import io.txoutbox.testing.postgres.TestPostgres;
import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import javax.sql.DataSource;
import org.postgresql.ds.PGSimpleDataSource;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * Batched retention against a write load: writers commit one event per transaction for a while alone, then while
 * {@link OutboxRetention} deletes a backlog of old published rows. Reports rows deleted per second and the writers'
 * commit rate with and without the retention running. PostgreSQL only (no broker, no relay).
 */
@Command(name = "retention", mixinStandardHelpOptions = true,
        description = "Batched retention (rows/s deleted) and its cost to a concurrent write load.")
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

    @Option(names = "--batch-size", defaultValue = "" + OutboxRetention.DEFAULT_BATCH_SIZE)
    int batchSize;

    @Option(names = "--pause-ms", defaultValue = "20", description = "pause between batches (default ${DEFAULT-VALUE})")
    int pauseMs;

    @Option(names = "--rounds", defaultValue = "2")
    int rounds;

    @Option(names = "--payload-bytes", defaultValue = "300")
    int payloadBytes;

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
        System.out.println("| round | writers alone (commits/s) | writers during retention (commits/s) | drop |"
                + " rows deleted | retention s | rows/s deleted |");
        System.out.println("|---:|---:|---:|---:|---:|---:|---:|");
        try {
            for (int round = 1; round <= rounds; round++) {
                OutboxSchema schema = OutboxSchema.builder().schema("bench_retention_" + round).build();
                schema.migrate(ds);
                String t = schema.qualifiedOutboxTable();
                String payload = "{\"p\":\"" + "x".repeat(Math.max(0, payloadBytes - 8)) + "\"}";
                try (Connection c = ds.getConnection(); Statement st = c.createStatement()) {
                    st.execute("INSERT INTO " + t + " (topic, partition_key, aggregate_type, aggregate_id, event_type,"
                            + " payload, state, created_at, published_at) SELECT 'orders', 'k-' || (g % 1000),"
                            + " 'Order', g::text, 'E', '" + payload + "'::jsonb, 'PUBLISHED',"
                            + " now() - interval '10 days', now() - interval '10 days' FROM generate_series(1, " + rows
                            + ") g");
                    st.execute("VACUUM ANALYZE " + t);
                }
                Outbox outbox = Outbox.builder().schema(schema).build();
                AtomicLong commits = new AtomicLong();
                AtomicBoolean stop = new AtomicBoolean();
                ExecutorService pool = Executors.newFixedThreadPool(writers);
                List<Future<?>> running = new ArrayList<>();
                for (int w = 0; w < writers; w++) {
                    running.add(pool.submit(() -> {
                        try (Connection c = ds.getConnection()) {
                            c.setAutoCommit(false);
                            while (!stop.get()) {
                                outbox.publish(c, OutboxMessage.builder().topic("orders").key("live")
                                        .aggregate("Order", "1").eventType("Live").jsonPayload(payload).build());
                                c.commit();
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
                long c1 = commits.get();
                long t1 = System.nanoTime();
                OutboxRetention.Result r = retention.deleteOlderThan(Instant.now().minus(Duration.ofDays(1)));
                double secs = (System.nanoTime() - t1) / 1e9;
                double during = (commits.get() - c1) / secs;
                stop.set(true);
                for (Future<?> f : running) {
                    f.get();
                }
                pool.shutdown();
                System.out.printf("| %d | %.0f | %.0f | %.1f%% | %d | %.1f | %.0f |%n", round, alone, during,
                        100.0 * (alone - during) / alone, r.deleted(), secs, r.deleted() / secs);
                try (Connection c = ds.getConnection(); Statement st = c.createStatement()) {
                    st.execute("DROP SCHEMA " + schema.schema() + " CASCADE");
                }
            }
            System.out.println("load at end " + BenchEnv.loadAverage());
        } finally {
            if (embedded != null) {
                embedded.close();
            }
        }
        return 0;
    }
}
