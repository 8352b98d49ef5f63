package io.txoutbox.spring;

import io.txoutbox.Inbox;
import java.util.UUID;
import org.apache.kafka.clients.consumer.ConsumerRecord;

/**
 * Applies each event's effects once, in the current Spring-managed transaction: a {@code @KafkaListener} records the
 * event id in {@code processed_event} together with its own changes, and a redelivery (Kafka's at-least-once, a
 * replay) finds the row and skips the work.
 *
 * <pre>{@code
 * @KafkaListener(topics = "order.events", groupId = "payment")
 * @Transactional
 * public void on(ConsumerRecord<String, String> record) {
 *     inbox.once("payment", record, () -> payments.charge(read(record.value())));
 * }
 * }</pre>
 *
 * Put {@code @Transactional} on the listener method (or give the container a transaction manager): then the
 * listener container commits the record's offset only after the database transaction committed, and a crash in
 * between redelivers the record, which the dedupe row turns into a no-op. Like {@link OutboxEventPublisher}, every
 * method refuses to run without a transaction on the outbox's {@code DataSource}.
 */
public interface TransactionalInbox {

    /**
     * Runs {@code work} unless {@code consumer} already processed {@code eventId}; returns what it did. If the work
     * throws, the exception propagates and the transaction must roll back (the dedupe row is part of it).
     */
    Inbox.Outcome once(String consumer, UUID eventId, Runnable work);

    /** Like {@link #once(String, UUID, Runnable)} with the record's {@code event_id} header (set by the relay). */
    Inbox.Outcome once(String consumer, ConsumerRecord<?, ?> record, Runnable work);

    /**
     * Stores the record in the durable inbox ({@code inbox_event}) for {@code consumer}, in the current transaction,
     * for the inbox worker to process later in order per key (the notes' {@code tryInsert}, for critical or bursty
     * flows): the listener returns fast and the offset is committed after the row. Returns false for a record
     * already stored (a redelivery). Keys and values must be {@code String} or {@code byte[]}.
     *
     * <pre>{@code
     * @KafkaListener(topics = "order.events", groupId = "shipping")
     * @Transactional
     * public void on(ConsumerRecord<String, String> record) {
     *     inbox.receive("shipping", record);
     * }
     * }</pre>
     */
    boolean receive(String consumer, ConsumerRecord<?, ?> record);
}
