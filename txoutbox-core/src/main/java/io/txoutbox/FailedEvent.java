package io.txoutbox;

import java.time.Instant;
import java.util.UUID;

/**
 * One parked, dead or discarded event as {@link OutboxAdmin#list} and {@link InboxAdmin#list} show it, with the last
 * operator change made to it (null if none). {@code consumer} is null for the outbox; {@code topic} is the inbox's
 * source topic and {@code createdAt} its {@code received_at}; {@code waiting} is, for a parked head, how many later
 * events of its key wait behind it (else 0).
 */
public record FailedEvent(long id, UUID eventId, String consumer, FailedState state, String key, String topic,
        String eventType, int attempts, String lastError, Instant createdAt, Instant failedAt, long waiting,
        String operatorAction, String operatorName, Instant operatorAt) {
}
