package io.txoutbox.example.spring;

import org.springframework.boot.autoconfigure.SpringBootApplication;

/**
 * Two services in one application, each in its own package: {@code orders} places orders and publishes
 * {@code OrderCreatedEvent} through the outbox; {@code payments} consumes {@code order.events} and pays each order once.
 * The txoutbox starter runs the relay in between. {@link SpringOrdersDemo} starts it with a load and a check.
 */
@SpringBootApplication
public class SpringOrdersApplication {
}
