package io.txoutbox;

import io.txoutbox.internal.inbox.InboxBytes;
import java.util.Map;
import java.util.Objects;
import java.util.UUID;

/**
 * A received message to store in the inbox with {@link Inbox#receive}. Only {@code eventId} is required; the source
 * fields say where it came from (topic, partition, offset) and are kept for operators.
 *
 * <p>Keys and header values are bytes ({@link #keyBytes}, {@link #headerBytes}); {@link #key} and {@link #headers}
 * are their text forms: the UTF-8 text when the bytes are valid UTF-8 without NUL, else {@code \x} and the bytes in
 * lowercase hex. Give either form; the other is derived. The inbox stores the bytes exactly.
 *
 * @param key partition key: the worker processes one key's messages in order, one at a time; null = no order
 * @param keyBytes the key's exact bytes (derived from {@code key} as UTF-8 when only that is given)
 * @param headerBytes the headers' exact values (a null value is kept as null); derived from {@code headers} when
 *     only those are given
 */
public record InboxMessage(UUID eventId, String key, String eventType, String aggregateType, String aggregateId,
        Long aggregateVersion, byte[] payload, Map<String, String> headers, String sourceTopic,
        Integer sourcePartition, Long sourceOffset, byte[] keyBytes, Map<String, byte[]> headerBytes) {

    public InboxMessage {
        Objects.requireNonNull(eventId, "inboxMessage.eventId");
        if (keyBytes != null) {
            String form = InboxBytes.textForm(keyBytes);
            if (key != null && !key.equals(form)) {
                throw new IllegalArgumentException("inboxMessage.key is not the text form of inboxMessage.keyBytes"
                        + " (event " + eventId + "): give only one of them");
            }
            key = form;
        } else if (key != null) {
            keyBytes = InboxBytes.utf8(key);
        }
        boolean noHeaders = headers == null || headers.isEmpty();
        if (headerBytes != null && !headerBytes.isEmpty()) {
            if (noHeaders) {
                headers = InboxBytes.textHeaders(headerBytes);
            } else if (!headers.keySet().equals(headerBytes.keySet())) {
                throw new IllegalArgumentException("inboxMessage.headers and inboxMessage.headerBytes name different "
                        + "headers: give only one of them");
            }
            headerBytes = java.util.Collections.unmodifiableMap(new java.util.LinkedHashMap<>(headerBytes));
        } else {
            headerBytes = InboxBytes.bytesOf(headers);
        }
        headers = headers == null ? Map.of() : Map.copyOf(headers);
    }

    /** The fields before the key and header bytes: the key and headers are text (stored as their UTF-8). */
    public InboxMessage(UUID eventId, String key, String eventType, String aggregateType, String aggregateId,
            Long aggregateVersion, byte[] payload, Map<String, String> headers, String sourceTopic,
            Integer sourcePartition, Long sourceOffset) {
        this(eventId, key, eventType, aggregateType, aggregateId, aggregateVersion, payload, headers, sourceTopic,
                sourcePartition, sourceOffset, null, null);
    }

    public static Builder builder(UUID eventId) {
        return new Builder(eventId);
    }

    /** Builder; every field but the event id is optional. */
    public static final class Builder {
        private final UUID eventId;
        private String key;
        private byte[] keyBytes;
        private Map<String, byte[]> headerBytes;
        private String eventType;
        private String aggregateType;
        private String aggregateId;
        private Long aggregateVersion;
        private byte[] payload;
        private Map<String, String> headers = Map.of();
        private String sourceTopic;
        private Integer sourcePartition;
        private Long sourceOffset;

        private Builder(UUID eventId) {
            this.eventId = eventId;
        }

        /** A text key (stored as its UTF-8 bytes). */
        public Builder key(String key) {
            this.key = key;
            this.keyBytes = null;
            return this;
        }

        /** A key of any bytes (a Kafka record's key as it arrived: Schema Registry prefix, binary ids, …). */
        public Builder key(byte[] key) {
            this.keyBytes = key == null ? null : key.clone();
            this.key = null;
            return this;
        }

        public Builder eventType(String eventType) {
            this.eventType = eventType;
            return this;
        }

        public Builder aggregate(String type, String id, Long version) {
            this.aggregateType = type;
            this.aggregateId = id;
            this.aggregateVersion = version;
            return this;
        }

        public Builder payload(byte[] payload) {
            this.payload = payload;
            return this;
        }

        public Builder headers(Map<String, String> headers) {
            this.headers = headers;
            this.headerBytes = null;
            return this;
        }

        /** Headers of any bytes, in order (a null value is kept); {@code headers()} gets their text forms. */
        public Builder headerBytes(Map<String, byte[]> headerBytes) {
            this.headerBytes = headerBytes;
            this.headers = Map.of();
            return this;
        }

        public Builder source(String topic, Integer partition, Long offset) {
            this.sourceTopic = topic;
            this.sourcePartition = partition;
            this.sourceOffset = offset;
            return this;
        }

        public InboxMessage build() {
            return new InboxMessage(eventId, key, eventType, aggregateType, aggregateId, aggregateVersion, payload,
                    headers, sourceTopic, sourcePartition, sourceOffset, keyBytes, headerBytes);
        }
    }
}
