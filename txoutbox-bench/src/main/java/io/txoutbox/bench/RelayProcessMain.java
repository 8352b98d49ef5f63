package io.txoutbox.bench;

import io.txoutbox.OutboxSchema;
import io.txoutbox.PollingRelay;
import io.txoutbox.kafka.KafkaTransport;
import java.time.Duration;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * A relay instance as its own JVM, for benchmarks that SIGKILL one. Arguments: jdbcUrl user password schema
 * bootstrapServers lanes batchSize mode. Woken by {@code LISTEN/NOTIFY} (the writers run in another process). Prints
 * {@code RELAY-LANES <n>} whenever the number of lanes it owns changes.
 */
public final class RelayProcessMain {

    private RelayProcessMain() {
    }

    public static void main(String[] args) throws Exception {
        PGSimpleDataSource ds = new PGSimpleDataSource();
        ds.setURL(args[0]);
        ds.setUser(args[1]);
        ds.setPassword(args[2]);
        OutboxSchema schema = OutboxSchema.builder().schema(args[3]).build();
        PollingRelay relay = PollingRelay.builder().dataSource(ds).schema(schema).name("bench-takeover")
                .transport(KafkaTransport.builder().bootstrapServers(args[4])
                        .mode(KafkaTransport.Mode.valueOf(args[7])).build())
                .lanes(Integer.parseInt(args[5])).batchSize(Integer.parseInt(args[6])).listenNotify(true)
                .build().start();
        Runtime.getRuntime().addShutdownHook(new Thread(relay::close));
        int reported = -1;
        while (true) {
            int owned = relay.stats().lanesOwned();
            if (owned != reported) {
                System.out.println("RELAY-LANES " + owned);
                System.out.flush();
                reported = owned;
            }
            Thread.sleep(20); // reporting our own status to the parent: nothing to wait on
        }
    }
}
