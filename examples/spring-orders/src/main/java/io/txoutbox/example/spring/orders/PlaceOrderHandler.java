package io.txoutbox.example.spring.orders;

import io.txoutbox.spring.OutboxEventPublisher;
import java.util.UUID;
import org.springframework.stereotype.Service;
import org.springframework.transaction.annotation.Transactional;

/**
 * The use case. The order row and its event commit together or not at all: {@code publish} only INSERTs the event
 * into the outbox table, on the connection of this transaction; the relay sends it to Kafka after the commit. Each
 * order is its own key (a new aggregate, written by one transaction), so there is nothing to lock for the order of
 * its events.
 */
@Service
public class PlaceOrderHandler {

    public static final String TOPIC = "order.events";

    private final OrderRepository orders;
    private final OutboxEventPublisher outboxEventPublisher;

    public PlaceOrderHandler(OrderRepository orders, OutboxEventPublisher outboxEventPublisher) {
        this.orders = orders;
        this.outboxEventPublisher = outboxEventPublisher;
    }

    @Transactional
    public UUID handle(PlaceOrder command) {
        Order order = orders.save(Order.place(command));
        outboxEventPublisher.publish(TOPIC, order.id().toString(),
                new OrderCreatedEvent(UUID.randomUUID(), order.id(), order.total()));
        return order.id();
    }
}
