package io.txoutbox;

import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.Map;
import java.util.UUID;

/**
 * An inbox row handed to an {@link InboxHandler}.
 *
 * @param attempts failed attempts so far (0 on the first try)
 */
public record InboxEvent(long id, String consumer, UUID eventId, String key, String eventType, String aggregateType,
        String aggregateId, Long aggregateVersion, byte[] payload, Map<String, String> headers, String sourceTopic,
        Integer sourcePartition, Long sourceOffset, Instant receivedAt, int attempts) {

    /** The payload as UTF-8 text (JSON payloads), or null. */
    public String payloadAsString() {
        return payload == null ? null : new String(payload, StandardCharsets.UTF_8);
    }

    @Override
    public String toString() { // never the payload
        return "InboxEvent[" + consumer + " " + eventId + " key=" + key + " type=" + eventType + " attempts="
                + attempts + "]";
    }
}
