package io.txoutbox;

import io.txoutbox.internal.config.Checks;
import io.txoutbox.internal.inbox.DefaultInbox;
import java.sql.Connection;
import java.util.List;
import java.util.Objects;
import java.util.UUID;

/**
 * The consumer side: idempotent handling of events that arrive at least once.
 *
 * <p><b>Dedupe in the handler's transaction.</b> {@link #once} records {@code (consumer, event_id)} in
 * {@code processed_event} with {@code INSERT … ON CONFLICT DO NOTHING} on the caller's connection, inside the caller's
 * transaction, and runs the work only if the row is new. The effects and the dedupe row commit together or not at
 * all, so every event's effects are applied exactly once however often it is delivered:
 *
 * <pre>{@code
 * Inbox inbox = Inbox.create(OutboxSchema.defaults());       // once, thread-safe
 *
 * connection.setAutoCommit(false);
 * Inbox.Outcome outcome = inbox.once(connection, "billing", eventId,
 *         Inbox.version("Order", orderId, version),           // optional: also refuse stale versions
 *         c -> chargeOrder(c, order));
 * connection.commit();                                       // effects and dedupe row, or neither
 * }</pre>
 *
 * <p><b>Durable inbox.</b> {@link #receive} stores received messages in {@code inbox_event} (a redelivery is dropped
 * by its primary key {@code (consumer, event_id)}); an {@link InboxWorker} processes them later in its own
 * transactions, in order per key, with retries, parking and dead letters. {@code KafkaInboxConsumer} in
 * {@code txoutbox-kafka} does either from a Kafka topic.
 *
 * <p>The tables live in the schema of the given {@link OutboxSchema} and are created by its
 * {@link OutboxSchema#migrate migrate} (script {@code V2__inbox.sql}).
 */
public interface Inbox {

    /** What {@link #once} did. */
    enum Outcome {
        /** The work ran (and its effects commit with the caller's transaction). */
        APPLIED,
        /** The consumer had already processed this event id: the work was skipped. */
        DUPLICATE,
        /** The consumer had already applied this or a higher version of the aggregate: the work was skipped. */
        STALE_VERSION;

        public boolean applied() {
            return this == APPLIED;
        }
    }

    /** A per-aggregate version carried by an event (the outbox's {@code aggregate_version}). */
    record AggregateVersion(String aggregateType, String aggregateId, long version) {
        public AggregateVersion {
            Objects.requireNonNull(aggregateType, "aggregateType");
            Objects.requireNonNull(aggregateId, "aggregateId");
        }
    }

    /** The effects of one event, applied through the caller's connection. */
    @FunctionalInterface
    interface Work {
        void apply(Connection connection) throws Exception;
    }

    static AggregateVersion version(String aggregateType, String aggregateId, long version) {
        return new AggregateVersion(aggregateType, aggregateId, version);
    }

    /**
     * Runs {@code work} once per {@code (consumer, eventId)}: inserts the dedupe row in the caller's transaction and
     * runs the work only if the row was new. Never opens, commits or rolls back; refuses an autocommit connection.
     * If the work throws, the exception propagates (checked ones wrapped in {@link OutboxException}) and the caller
     * must roll back: the dedupe row is part of the same transaction. A concurrent transaction handling the same
     * event waits for this one and then sees a duplicate.
     */
    default Outcome once(Connection connection, String consumer, UUID eventId, Work work) {
        return once(connection, consumer, eventId, null, work);
    }

    /**
     * Like {@link #once(Connection, String, UUID, Work)}, and also skips the work (reporting
     * {@link Outcome#STALE_VERSION}) when this consumer already applied an equal or higher version of the aggregate.
     * The applied version is recorded in {@code applied_version}, which retention never deletes: it still rejects an
     * old event replayed after its dedupe row was cleaned up. {@code version} may be null (no check).
     */
    Outcome once(Connection connection, String consumer, UUID eventId, AggregateVersion version, Work work);

    /**
     * Stores received messages in {@code inbox_event} for an {@link InboxWorker}, in the caller's transaction, with
     * one multi-row {@code INSERT … ON CONFLICT DO NOTHING} per {@value Outbox#MAX_ROWS_PER_STATEMENT} messages: a
     * message whose {@code (consumer, event_id)} is already there is dropped. Rows are numbered in list order, which is
     * the order the worker processes one key's events in. Returns how many were new. Keys and header values are
     * stored byte for byte ({@link InboxMessage#keyBytes}, {@link InboxMessage#headerBytes}); a row the database
     * refuses anyway (a constraint of your own, …) fails the call: roll back. {@code KafkaInboxConsumer} instead
     * finds the refused row and stores it as {@code DEAD} with the reason, so one record never stalls a partition.
     */
    int receive(Connection connection, String consumer, List<InboxMessage> messages);

    /** An inbox whose tables live in the given schema. */
    static Inbox create(OutboxSchema schema) {
        return new DefaultInbox(Checks.schema("inbox", schema));
    }

    /** An inbox in {@code public}. */
    static Inbox create() {
        return create(OutboxSchema.defaults());
    }
}
