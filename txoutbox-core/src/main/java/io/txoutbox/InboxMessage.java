package io.txoutbox;

import java.util.Map;
import java.util.Objects;
import java.util.UUID;

/**
 * A received message to store in the inbox with {@link Inbox#receive}. Only {@code eventId} is required; the source
 * fields say where it came from (topic, partition, offset) and are kept for operators.
 *
 * @param key partition key: the worker processes one key's messages in order, one at a time; null = no order
 */
public record InboxMessage(UUID eventId, String key, String eventType, String aggregateType, String aggregateId,
        Long aggregateVersion, byte[] payload, Map<String, String> headers, String sourceTopic,
        Integer sourcePartition, Long sourceOffset) {

    public InboxMessage {
        Objects.requireNonNull(eventId, "inboxMessage.eventId");
        headers = headers == null ? Map.of() : Map.copyOf(headers);
    }

    public static Builder builder(UUID eventId) {
        return new Builder(eventId);
    }

    /** Builder; every field but the event id is optional. */
    public static final class Builder {
        private final UUID eventId;
        private String key;
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

        public Builder key(String key) {
            this.key = key;
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
                    headers, sourceTopic, sourcePartition, sourceOffset);
        }
    }
}
