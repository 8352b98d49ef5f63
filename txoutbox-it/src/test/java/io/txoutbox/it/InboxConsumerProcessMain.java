package io.txoutbox.it;

import io.txoutbox.InboxHandler;
import io.txoutbox.InboxWorker;
import io.txoutbox.OutboxSchema;
import io.txoutbox.kafka.KafkaInboxConsumer;
import java.nio.charset.StandardCharsets;
import java.sql.PreparedStatement;
import java.time.Duration;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * A Kafka inbox consumer as its own JVM, for tests that SIGKILL it. Arguments: jdbcUrl user password schema
 * bootstrapServers topic mode(handle|store) consumerName. Each event's effect is one row in {@code effect}; in store
 * mode an InboxWorker in the same process applies them. Prints {@code INBOX-CONSUMER-STARTED}.
 */
public final class InboxConsumerProcessMain {

    public static void main(String[] args) throws Exception {
        PGSimpleDataSource ds = new PGSimpleDataSource();
        ds.setURL(args[0]);
        ds.setUser(args[1]);
        ds.setPassword(args[2]);
        OutboxSchema schema = OutboxSchema.builder().schema(args[3]).build();
        String mode = args[6];
        String consumer = args[7];
        InboxHandler effect = (c, e) -> {
            try (PreparedStatement ps = c.prepareStatement("INSERT INTO effect (event_id, k, seq) VALUES (?, ?, ?)")) {
                ps.setObject(1, e.eventId());
                ps.setString(2, e.key());
                ps.setInt(3, Integer.parseInt(new String(e.payload(), StandardCharsets.UTF_8)));
                ps.executeUpdate();
            }
        };
        KafkaInboxConsumer.Builder builder = KafkaInboxConsumer.builder().bootstrapServers(args[4]).groupId(consumer)
                .topics(args[5]).dataSource(ds).schema(schema).pollTimeout(Duration.ofMillis(100))
                .property("max.poll.records", 300)
                // static membership: a restarted process takes its partitions back at once instead of waiting for
                // the killed one's session to expire (45 s by default)
                .property("group.instance.id", consumer + "-instance").property("session.timeout.ms", 6000);
        InboxWorker worker = null;
        if (mode.equals("store")) {
            worker = InboxWorker.builder().dataSource(ds).schema(schema).consumer(consumer).lanes(4).batchSize(200)
                    .pollInterval(Duration.ofMillis(50)).handler("Seq", effect).build().start();
            builder.storeInInbox().afterStore(worker::nudge);
        } else {
            builder.handler(effect).deadLetterTopic(args[5] + ".dlt");
        }
        KafkaInboxConsumer kafka = builder.build().start();
        InboxWorker w = worker;
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            kafka.close();
            if (w != null) {
                w.close();
            }
        }));
        System.out.println("INBOX-CONSUMER-STARTED " + mode);
        System.out.flush();
        Thread.currentThread().join(); // until killed
    }
}
