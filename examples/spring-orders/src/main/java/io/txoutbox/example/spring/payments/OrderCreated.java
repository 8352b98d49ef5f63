package io.txoutbox.example.spring.payments;

import java.math.BigDecimal;
import java.util.UUID;

/** The payment service's own view of the order service's {@code OrderCreatedEvent}: what it needs of it. */
public record OrderCreated(UUID orderId, BigDecimal total) {
}
