package io.txoutbox.it;

import io.txoutbox.OutboxReplay;
import io.txoutbox.OutboxSchema;
import io.txoutbox.kafka.KafkaTransport;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * An {@link OutboxReplay} as its own JVM, for the test that SIGKILLs it. Arguments: jdbcUrl user password schema
 * bootstrapServers name toTopic batchSize maxRate. Prints {@code REPLAY-RESULT <result>} when it returns.
 */
public final class ReplayProcessMain {

    private ReplayProcessMain() {
    }

    public static void main(String[] args) {
        PGSimpleDataSource ds = new PGSimpleDataSource();
        ds.setURL(args[0]);
        ds.setUser(args[1]);
        ds.setPassword(args[2]);
        OutboxReplay replay = OutboxReplay.builder().dataSource(ds)
                .schema(OutboxSchema.builder().schema(args[3]).build())
                .transport(KafkaTransport.builder().bootstrapServers(args[4]).build())
                .name(args[5]).toTopic(args[6]).batchSize(Integer.parseInt(args[7]))
                .maxRate(Double.parseDouble(args[8]))
                .build();
        OutboxReplay.Result result = replay.run();
        Runtime rt = Runtime.getRuntime();
        System.out.println("REPLAY-RESULT " + result + " heapMaxMiB=" + rt.maxMemory() / (1 << 20));
        System.out.flush();
        System.exit(result.done() ? 0 : 3);
    }
}
