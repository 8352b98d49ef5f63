package io.txoutbox.spring;

import io.txoutbox.OutboxMessage;
import java.util.List;
import java.util.Map;
import java.util.UUID;

/**
 * Writes events into the outbox inside the current Spring-managed transaction, the way a use-case handler is written:
 *
 * <pre>{@code
 * @Transactional
 * public OrderId handle(PlaceOrder command) {
 *     Order order = orders.save(Order.place(command));
 *     outboxEventPublisher.publish("order.events", order.id().toString(),
 *             new OrderCreatedEvent(UUID.randomUUID(), order.id(), order.total()));
 *     return order.id();
 * }
 * }</pre>
 *
 * The event row is INSERTed on the connection of the current transaction (JDBC, JPA/Hibernate or jOOQ on the same
 * {@code DataSource}), so it commits or rolls back with the business rows. There is no publish outside a transaction:
 * without an active Spring-managed transaction on the outbox's {@code DataSource} every method throws
 * {@link IllegalStateException} and writes nothing. After the commit the in-process relay is woken at once.
 *
 * <p>The event object is serialized to JSON with the application's Jackson mapper. Its {@code event_type} is the
 * event class's simple name; {@code event_id} is always the outbox's own UUIDv7 (an id the event carries is payload);
 * {@code aggregate_type} and {@code aggregate_id} come from {@link AggregateEvent} when the event implements it, else
 * the aggregate id is the key and the aggregate type the topic.
 */
public interface OutboxEventPublisher {

    /**
     * Writes {@code event} as JSON to {@code topic} with partition key {@code key} (the unit of ordering; events of one
     * key are delivered in publish order). Returns the event's id, the consumers' dedupe key.
     */
    UUID publish(String topic, String key, Object event);

    /** Like {@link #publish(String, String, Object)}, with headers (names and values free of control characters). */
    UUID publish(String topic, String key, Object event, Map<String, String> headers);

    /** Writes a fully specified message (event type, aggregate, version, payload form, headers). */
    UUID publish(OutboxMessage message);

    /** Writes the messages with as few INSERT statements as possible; returns their ids in order. */
    List<UUID> publish(List<OutboxMessage> messages);
}
