package io.txoutbox;

import io.txoutbox.internal.MessageRules;
import io.txoutbox.internal.UuidV7;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.UUID;

/**
 * One event to publish. Build it with {@link #builder()}; every field is checked when the message is built, so a bad
 * message never reaches the database.
 *
 * @param eventId          unique id of the event, the dedupe key for consumers; a UUIDv7 (time-ordered) unless given
 * @param topic            Kafka topic, in Kafka's alphabet {@code [a-zA-Z0-9._-]{1,249}}
 * @param key              partition key, the unit of ordering; defaults to {@code aggregateId}; {@code null} means no
 *                         ordering promise (the events spread over partitions)
 * @param aggregateType    type of the entity that changed, e.g. {@code Order}
 * @param aggregateId      id of the entity that changed
 * @param aggregateVersion optional per-aggregate version (increasing), lets consumers reject stale events
 * @param eventType        what happened, e.g. {@code OrderCreated}
 * @param payload          the body
 * @param headers          user headers (e.g. W3C {@code traceparent}); names and values free of control characters
 */
public record OutboxMessage(
        UUID eventId,
        String topic,
        String key,
        String aggregateType,
        String aggregateId,
        Long aggregateVersion,
        String eventType,
        Payload payload,
        Map<String, String> headers) {

    public OutboxMessage {
        Objects.requireNonNull(eventId, "eventId must not be null");
        Objects.requireNonNull(payload, "payload must not be null; use Payload.none() for no body");
        headers = headers == null ? Map.of() : Collections.unmodifiableMap(new LinkedHashMap<>(headers));
        MessageRules.check(eventId, topic, key, aggregateType, aggregateId, aggregateVersion, eventType, payload,
                headers);
    }

    public static Builder builder() {
        return new Builder();
    }

    /** A builder starting from this message's values, e.g. to send a copy to another topic. */
    public Builder toBuilder() {
        Builder b = new Builder();
        b.eventId = eventId;
        b.topic = topic;
        b.key = key;
        b.keySet = true;
        b.aggregateType = aggregateType;
        b.aggregateId = aggregateId;
        b.aggregateVersion = aggregateVersion;
        b.eventType = eventType;
        b.payload = payload;
        b.headers.putAll(headers);
        return b;
    }

    @Override
    public String toString() {
        // never the payload or header values: they may carry personal data
        return "OutboxMessage[eventId=" + eventId + ", topic=" + topic + ", eventType=" + eventType
                + ", aggregate=" + aggregateType + "/" + aggregateId + "]";
    }

    public static final class Builder {
        private UUID eventId;
        private String topic;
        private String key;
        private boolean keySet;
        private String aggregateType;
        private String aggregateId;
        private Long aggregateVersion;
        private String eventType;
        private Payload payload = Payload.none();
        private final Map<String, String> headers = new LinkedHashMap<>();

        private Builder() {
        }

        /** Sets the event id; without it a new UUIDv7 is generated when the message is built. */
        public Builder eventId(UUID eventId) {
            this.eventId = Objects.requireNonNull(eventId, "eventId");
            return this;
        }

        public Builder topic(String topic) {
            this.topic = topic;
            return this;
        }

        /** Sets the partition key. {@code null} is allowed and means "no ordering promise". */
        public Builder key(String key) {
            this.key = key;
            this.keySet = true;
            return this;
        }

        /** Sets aggregate type and id; the id is also the partition key unless {@link #key(String)} is called. */
        public Builder aggregate(String type, String id) {
            this.aggregateType = type;
            this.aggregateId = id;
            return this;
        }

        public Builder aggregateVersion(long version) {
            this.aggregateVersion = version;
            return this;
        }

        public Builder eventType(String eventType) {
            this.eventType = eventType;
            return this;
        }

        public Builder payload(Payload payload) {
            this.payload = Objects.requireNonNull(payload, "payload; use Payload.none() for no body");
            return this;
        }

        /** A JSON text payload, stored as {@code jsonb}. */
        public Builder jsonPayload(String json) {
            return payload(Payload.json(json));
        }

        /** A binary payload, stored as {@code bytea}. */
        public Builder bytesPayload(byte[] bytes) {
            return payload(Payload.bytes(bytes));
        }

        /** An object payload, serialized by the outbox's {@link io.txoutbox.spi.PayloadSerializer} on publish. */
        public Builder objectPayload(Object value) {
            return payload(Payload.object(value));
        }

        public Builder header(String name, String value) {
            headers.put(name, value);
            return this;
        }

        public Builder headers(Map<String, String> all) {
            headers.putAll(all);
            return this;
        }

        /** Validates and builds; throws {@link InvalidMessageException} naming the field at fault. */
        public OutboxMessage build() {
            UUID id = eventId != null ? eventId : UuidV7.next();
            String k = keySet ? key : aggregateId;
            return new OutboxMessage(id, topic, k, aggregateType, aggregateId, aggregateVersion, eventType, payload,
                    headers);
        }
    }
}
