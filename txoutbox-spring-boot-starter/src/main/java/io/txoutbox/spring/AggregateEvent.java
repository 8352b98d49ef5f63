package io.txoutbox.spring;

/**
 * Optionally implemented by an event to name the aggregate it is about; {@link OutboxEventPublisher} then writes
 * {@code aggregate_type}, {@code aggregate_id} and {@code aggregate_version} from it.
 *
 * <pre>{@code
 * record OrderCreatedEvent(UUID orderId, BigDecimal total) implements AggregateEvent {
 *     public String aggregateType() { return "Order"; }
 *     public String aggregateId() { return orderId.toString(); }
 * }
 * }</pre>
 */
public interface AggregateEvent {

    String aggregateType();

    String aggregateId();

    /** The aggregate's version after this event, increasing per aggregate (consumers can refuse stale ones); null: none. */
    default Long aggregateVersion() {
        return null;
    }
}
