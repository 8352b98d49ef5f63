package io.txoutbox;

import java.util.Arrays;
import java.util.Objects;

/**
 * The body of an event: JSON text (stored as {@code jsonb}), raw bytes (stored as {@code bytea}), an object turned
 * into either by the outbox's {@link io.txoutbox.spi.PayloadSerializer}, or nothing (a Kafka tombstone).
 */
public sealed interface Payload {

    /** JSON text; validated in the client (well-formed, no {@code \u0000}) before the INSERT. */
    static Payload json(String json) {
        return new Json(json);
    }

    /** Opaque bytes (Avro, Protobuf, …), stored and sent as they are. */
    static Payload bytes(byte[] bytes) {
        return new Bytes(bytes);
    }

    /** Any object, serialized by the outbox's {@link io.txoutbox.spi.PayloadSerializer} when published. */
    static Payload object(Object value) {
        return new ObjectValue(value);
    }

    /** No body: a Kafka tombstone for compacted topics. */
    static Payload none() {
        return None.INSTANCE;
    }

    record Json(String text) implements Payload {
        public Json {
            Objects.requireNonNull(text, "payload JSON must not be null; use Payload.none() for no body");
        }

        @Override
        public String toString() {
            return "Json[" + text.length() + " chars]";
        }
    }

    record Bytes(byte[] value) implements Payload {
        public Bytes {
            Objects.requireNonNull(value, "payload bytes must not be null; use Payload.none() for no body");
            value = value.clone();
        }

        @Override
        public byte[] value() {
            return value.clone();
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof Bytes b && Arrays.equals(value, b.value);
        }

        @Override
        public int hashCode() {
            return Arrays.hashCode(value);
        }

        @Override
        public String toString() {
            return "Bytes[" + value.length + " bytes]";
        }
    }

    record ObjectValue(Object value) implements Payload {
        public ObjectValue {
            Objects.requireNonNull(value, "payload object must not be null; use Payload.none() for no body");
        }

        @Override
        public String toString() {
            return "Object[" + value.getClass().getName() + "]";
        }
    }

    enum None implements Payload {
        INSTANCE
    }
}
