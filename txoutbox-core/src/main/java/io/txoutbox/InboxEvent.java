package io.txoutbox;

import io.txoutbox.internal.inbox.InboxBytes;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.Map;
import java.util.UUID;

/**
 * An inbox row handed to an {@link InboxHandler}.
 *
 * <p>Keys and header values arrive as bytes. {@link #keyBytes} and {@link #headerBytes} are those bytes exactly (a
 * Schema Registry key's 0x00 magic byte and schema id included); {@link #key} and {@link #headers} are their text
 * forms: the text itself when the bytes are valid UTF-8 without NUL, else {@code \x} and the bytes in lowercase hex
 * (e.g. {@code \x002a} for the key {@code {0x00, 0x2a}}). A text key reads the same through either accessor.
 *
 * @param attempts failed attempts so far (0 on the first try)
 * @param keyBytes the key's exact bytes, or null for a record without a key
 * @param headerBytes the headers' exact values by name (a null value stays null)
 */
public record InboxEvent(long id, String consumer, UUID eventId, String key, String eventType, String aggregateType,
        String aggregateId, Long aggregateVersion, byte[] payload, Map<String, String> headers, String sourceTopic,
        Integer sourcePartition, Long sourceOffset, Instant receivedAt, int attempts, byte[] keyBytes,
        Map<String, byte[]> headerBytes) {

    public InboxEvent {
        if (keyBytes == null && key != null) {
            keyBytes = InboxBytes.utf8(key);
        }
        if (headerBytes == null) {
            headerBytes = InboxBytes.bytesOf(headers);
        }
    }

    /** The fields before the key and header bytes: key and headers are text (their bytes are their UTF-8). */
    public InboxEvent(long id, String consumer, UUID eventId, String key, String eventType, String aggregateType,
            String aggregateId, Long aggregateVersion, byte[] payload, Map<String, String> headers,
            String sourceTopic, Integer sourcePartition, Long sourceOffset, Instant receivedAt, int attempts) {
        this(id, consumer, eventId, key, eventType, aggregateType, aggregateId, aggregateVersion, payload, headers,
                sourceTopic, sourcePartition, sourceOffset, receivedAt, attempts, null, null);
    }

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
