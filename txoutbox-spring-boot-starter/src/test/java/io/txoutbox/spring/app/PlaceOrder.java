package io.txoutbox.spring.app;

import io.txoutbox.spring.OutboxEventPublisher;
import java.math.BigDecimal;
import java.util.UUID;
import org.jooq.DSLContext;
import org.jooq.impl.DSL;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Service;
import org.springframework.transaction.annotation.Transactional;

/** The use-case handler as a Spring service writes it, once per persistence style. */
@Service
public class PlaceOrder {

    public static final String TOPIC = "order.events";

    private final JdbcTemplate jdbc;
    private final OrderRepository orders;
    private final DSLContext jooq;
    private final OutboxEventPublisher outboxEventPublisher;

    public PlaceOrder(JdbcTemplate jdbc, OrderRepository orders, DSLContext jooq,
            OutboxEventPublisher outboxEventPublisher) {
        this.jdbc = jdbc;
        this.orders = orders;
        this.jooq = jooq;
        this.outboxEventPublisher = outboxEventPublisher;
    }

    @Transactional
    public UUID withJdbc(String orderId, BigDecimal total, boolean failAfterPublish) {
        jdbc.update("INSERT INTO orders (id, total) VALUES (?, ?)", orderId, total);
        return publishThen(orderId, total, failAfterPublish);
    }

    @Transactional
    public UUID withJpa(String orderId, BigDecimal total, boolean failAfterPublish) {
        orders.saveAndFlush(new OrderEntity(orderId, total));
        return publishThen(orderId, total, failAfterPublish);
    }

    @Transactional
    public UUID withJooq(String orderId, BigDecimal total, boolean failAfterPublish) {
        jooq.insertInto(DSL.table("orders"), DSL.field("id"), DSL.field("total")).values(orderId, total).execute();
        return publishThen(orderId, total, failAfterPublish);
    }

    /** No @Transactional: the documented mistake. */
    public UUID withoutTransaction(String orderId, BigDecimal total) {
        return outboxEventPublisher.publish(TOPIC, orderId, new OrderCreatedEvent(UUID.randomUUID(), orderId, total));
    }

    private UUID publishThen(String orderId, BigDecimal total, boolean fail) {
        UUID id = outboxEventPublisher.publish(TOPIC, orderId,
                new OrderCreatedEvent(UUID.randomUUID(), orderId, total));
        if (fail) {
            throw new IllegalStateException("payment declined");
        }
        return id;
    }
}
