package io.txoutbox.spi;

import java.time.Instant;
import java.util.Arrays;
import java.util.Map;
import java.util.UUID;

/**
 * One stored event as a relay hands it to a {@link Transport}: what to send and everything needed to build broker
 * headers. {@code value} is the payload's bytes (UTF-8 JSON text for JSON payloads), or {@code null} for a tombstone.
 *
 * @param id           the row's position in the outbox (claim order)
 * @param eventId      the dedupe key; transports send it as the {@code event_id} header
 * @param createdAt    when the writing transaction started
 * @param attempts     how many sends failed before this one
 */
public record OutboxRecord(
        long id,
        UUID eventId,
        String topic,
        String key,
        String aggregateType,
        String aggregateId,
        Long aggregateVersion,
        String eventType,
        byte[] value,
        boolean json,
        Map<String, String> headers,
        Instant createdAt,
        int attempts) {

    public OutboxRecord {
        headers = headers == null ? Map.of() : Map.copyOf(headers);
    }

    /** The same event for another topic, with other headers (a dead-letter topic, a replay). */
    public OutboxRecord redirect(String topic, Map<String, String> headers) {
        return new OutboxRecord(id, eventId, topic, key, aggregateType, aggregateId, aggregateVersion, eventType,
                value, json, headers, createdAt, attempts);
    }

    /** Size of the value in bytes (0 for a tombstone). */
    public int valueSize() {
        return value == null ? 0 : value.length;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof OutboxRecord r && id == r.id && eventId.equals(r.eventId) && topic.equals(r.topic)
                && java.util.Objects.equals(key, r.key) && Arrays.equals(value, r.value)
                && headers.equals(r.headers) && attempts == r.attempts;
    }

    @Override
    public int hashCode() {
        return eventId.hashCode();
    }

    @Override
    public String toString() {
        return "OutboxRecord[id=" + id + ", eventId=" + eventId + ", topic=" + topic + ", eventType=" + eventType
                + ", " + valueSize() + " bytes]";
    }
}
