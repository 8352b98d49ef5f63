package io.txoutbox.it;

import io.txoutbox.OutboxPartitioning;
import io.txoutbox.OutboxSchema;
import io.txoutbox.PollingRelay;
import io.txoutbox.RetryPolicy;
import io.txoutbox.kafka.KafkaTransport;
import java.time.Duration;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * A polling relay as its own JVM, for tests that SIGKILL or SIGSTOP it. Arguments: jdbcUrl user password schema
 * bootstrapServers [lanes] [batchSize] [leaseMs] [expectedLanes] [transport mode]. Prints {@code RELAY-OWNS-ALL-LANES} once it works
 * {@code expectedLanes} lanes (default: all). The outbox's progress model comes from the system property
 * {@value #PROGRESS} ({@code ROW_STATE} or {@code CURSOR}, default {@code ROW_STATE}): the test's own schema object
 * must be on the same one, and on the partitioning {@value #PARTITIONING} names (3 periods ahead).
 */
public final class RelayProcessMain {

    /** The system property naming the outbox's {@link OutboxSchema.Progress} (the setting of the same name). */
    static final String PROGRESS = "txoutbox.schema.progress";
    /** The system property naming the outbox's partitioning period ({@code DAY}, ...; unset: a plain table). */
    static final String PARTITIONING = "txoutbox.schema.partitioning.period";

    public static void main(String[] args) throws Exception {
        PGSimpleDataSource ds = new PGSimpleDataSource();
        ds.setURL(args[0]);
        ds.setUser(args[1]);
        ds.setPassword(args[2]);
        String period = System.getProperty(PARTITIONING, "");
        OutboxSchema schema = OutboxSchema.builder().schema(args[3])
                .progress(OutboxSchema.Progress.valueOf(System.getProperty(PROGRESS, "ROW_STATE")))
                .partitioned(period.isEmpty() ? null
                        : new OutboxPartitioning(OutboxPartitioning.Period.valueOf(period), 3))
                .build();
        int lanes = args.length > 5 ? Integer.parseInt(args[5]) : 2;
        int batchSize = args.length > 6 ? Integer.parseInt(args[6]) : 200;
        long leaseMs = args.length > 7 ? Long.parseLong(args[7]) : 10_000;
        int expectedLanes = args.length > 8 ? Integer.parseInt(args[8]) : lanes;
        KafkaTransport.Mode mode = args.length > 9 ? KafkaTransport.Mode.valueOf(args[9])
                : KafkaTransport.Mode.TRANSACTIONAL;
        PollingRelay relay = PollingRelay.builder().dataSource(ds).schema(schema)
                .transport(KafkaTransport.builder().bootstrapServers(args[4]).mode(mode).build())
                .lanes(lanes).batchSize(batchSize).pollInterval(Duration.ofMillis(20))
                .leaseTimeout(Duration.ofMillis(leaseMs))
                .retry(RetryPolicy.defaults().withBackoff(Duration.ofMillis(100), Duration.ofSeconds(1)))
                .build().start();
        Runtime.getRuntime().addShutdownHook(new Thread(relay::close));
        long deadline = System.nanoTime() + Duration.ofMinutes(1).toNanos();
        while (relay.stats().lanesOwned() < expectedLanes && System.nanoTime() < deadline) {
            Thread.sleep(20); // polling our own status: no condition object to wait on across lanes
        }
        System.out.println("RELAY-OWNS-ALL-LANES " + relay.stats().lanesOwned());
        System.out.flush();
        Thread.currentThread().join(); // until killed
    }
}
