package io.txoutbox.kafka.internal;

import io.txoutbox.InboxMessage;
import io.txoutbox.OutboxException;
import io.txoutbox.internal.inbox.DefaultInbox;
import io.txoutbox.kafka.KafkaInboxConsumer;
import io.txoutbox.kafka.KafkaInboxConsumerConfig;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import javax.sql.DataSource;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Store mode: each poll's records are written to {@code inbox_event} in one database transaction for an
 * {@code InboxWorker}. A record that cannot be stored as it is goes to the dead-letter topic when one is configured,
 * else it is kept as a {@code DEAD} inbox row with the reason, so its partition never stalls.
 */
final class StoreMode implements ConsumerMode {

    private static final Logger log = LoggerFactory.getLogger(KafkaInboxConsumer.class);

    private final KafkaInboxConsumerConfig config;
    private final DataSource dataSource;
    private final DefaultInbox inbox;
    private final InboxMessages messages;
    private final Runnable afterStore;
    private final ConsumerCounters counters;

    StoreMode(KafkaInboxConsumerConfig config, DataSource dataSource, InboxMessages messages, Runnable afterStore,
            ConsumerCounters counters) {
        this.config = config;
        this.dataSource = dataSource;
        this.inbox = new DefaultInbox(config.schema());
        this.messages = messages;
        this.afterStore = afterStore;
        this.counters = counters;
    }

    @Override
    public String name() {
        return "store";
    }

    @Override
    public void process(ConsumerRecords<byte[], byte[]> records, ConsumerLoop loop) throws Exception {
        List<InboxMessage> batch = new ArrayList<>(records.count());
        List<ConsumerRecord<byte[], byte[]>> sources = new ArrayList<>(records.count());
        List<DeadLetters.Rejected> rejected = new ArrayList<>();
        Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
        for (TopicPartition p : records.partitions()) {
            for (ConsumerRecord<byte[], byte[]> r : records.records(p)) {
                try {
                    batch.add(messages.toMessage(r));
                    sources.add(r);
                } catch (RuntimeException e) {
                    rejected.add(new DeadLetters.Rejected(r, e, 1));
                }
                offsets.put(p, new OffsetAndMetadata(r.offset() + 1));
            }
        }
        DeadLetters deadLetters = loop.deadLetters();
        try (Connection c = dataSource.getConnection()) {
            c.setAutoCommit(false);
            try {
                DefaultInbox.Received received = inbox.receiveEach(c, config.consumer(), batch);
                counters.stored.add(received.inserted());
                for (DefaultInbox.Refused x : received.refused()) {
                    SQLException e = x.cause();
                    rejected.add(new DeadLetters.Rejected(sources.get(x.index()), new OutboxException("the database "
                            + "refused the row: " + e.getMessage() + " (SQLState " + e.getSQLState() + ")", e), 1));
                }
                if (deadLetters == null) {
                    storeDead(c, rejected); // in the batch's transaction: the offsets pass them only once they are kept
                }
                c.commit();
            } catch (SQLException | RuntimeException e) {
                ConsumerLoop.rollbackQuietly(c);
                throw e;
            }
        }
        if (deadLetters != null) {
            deadLetters.send(rejected);
        } else {
            counters.deadLettered.add(rejected.size());
        }
        loop.commit(offsets);
        runAfterStore();
    }

    /**
     * Without a dead-letter topic: a record that cannot be stored as it is (its event id or version header is
     * unreadable, or the database refused its row) is kept as a {@code DEAD} inbox row with the reason, never
     * processed, so its partition and its key move on and an operator finds it with the other dead events.
     */
    private void storeDead(Connection c, List<DeadLetters.Rejected> rejected) {
        for (DeadLetters.Rejected x : rejected) {
            ConsumerRecord<byte[], byte[]> r = x.record();
            InboxMessage m = messages.toLenientMessage(r);
            String reason = "not stored as received: " + x.cause();
            inbox.storeDead(c, config.consumer(), m, reason);
            log.error("txoutbox-kafka-inbox {}: record {}-{}@{} (event {}) cannot be stored as it is; kept as a DEAD "
                    + "inbox row (no dead-letter topic configured): {}", config.name(), r.topic(), r.partition(),
                    r.offset(), m.eventId(), x.cause().toString());
        }
    }

    /**
     * The batch is committed in the database and in Kafka when the callback runs, so its failure is the callback's
     * alone: logged and counted, never a reason to read the batch again (that would call it again, for ever).
     */
    private void runAfterStore() {
        if (afterStore == null) {
            return;
        }
        try {
            afterStore.run();
        } catch (Throwable t) {
            counters.afterStoreFailures.increment();
            log.error("txoutbox-kafka-inbox {}: the afterStore callback failed after a stored batch (the batch stays "
                    + "stored and committed): {}", config.name(), t.toString(), t);
        }
    }
}
