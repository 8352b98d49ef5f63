package io.txoutbox.spring.app;

import java.math.BigDecimal;
import java.util.UUID;

/** As the design notes write it: the event carries its own id (payload), the order id and the total. */
public record OrderCreatedEvent(UUID eventUuid, String orderId, BigDecimal orderTotal) {
}
