package io.txoutbox;

import java.time.Instant;
import java.util.UUID;

/**
 * One outbox or inbox event in any state, as {@link OutboxAdmin#show} and {@link InboxAdmin#show} read it.
 * {@code consumer} is null for the outbox; for the inbox {@code topic} is the source topic, {@code createdAt} the
 * {@code received_at} and {@code aggregateVersion} as received. {@code completedAt} is when the outbox published it
 * or the inbox processed it (null: not yet, or never). {@code headersJson} is the headers column as JSON text;
 * {@code payload} is null unless asked for (JSON payloads as UTF-8 text, binary ones as stored).
 */
public record EventDetails(long id, UUID eventId, String consumer, String state, String topic, String key, int shard,
        String aggregateType, String aggregateId, Long aggregateVersion, String eventType, String headersJson,
        Instant createdAt, int attempts, Instant nextAttemptAt, String lastError, Instant failedAt,
        Instant completedAt, String operatorAction, String operatorName, Instant operatorAt, byte[] payload) {
}
