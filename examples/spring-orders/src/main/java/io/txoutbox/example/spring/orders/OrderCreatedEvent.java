package io.txoutbox.example.spring.orders;

import java.math.BigDecimal;
import java.util.UUID;

/**
 * The event, as the design notes write it. Its own {@code eventUuid} is payload; the outbox gives every event an
 * {@code event_id} of its own (UUIDv7, sent as a Kafka header), which consumers dedupe by.
 */
public record OrderCreatedEvent(UUID eventUuid, UUID orderId, BigDecimal total) {
}
