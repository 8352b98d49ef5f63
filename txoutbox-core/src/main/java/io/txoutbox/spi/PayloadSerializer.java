package io.txoutbox.spi;

import io.txoutbox.Payload;

/**
 * Turns an object payload ({@link Payload#object(Object)}) into JSON text or bytes when it is published, inside the
 * caller's transaction but before anything is sent to PostgreSQL. Implementations must be thread-safe. Throwing is
 * fine: the publish fails with a clear error and the transaction stays usable.
 *
 * <p>{@code io.txoutbox.jackson.JacksonPayloadSerializer} is the ready-made JSON one (Jackson 3 on the classpath).
 */
@FunctionalInterface
public interface PayloadSerializer {

    /** Returns {@link Payload.Json} or {@link Payload.Bytes} for the value. */
    Payload serialize(Object value) throws Exception;

    /** The serializer used when none is configured: it refuses object payloads with a message that says what to do. */
    static PayloadSerializer none() {
        return value -> {
            throw new IllegalStateException("no PayloadSerializer is configured for object payloads of type "
                    + value.getClass().getName() + ": configure Outbox.builder().payloadSerializer(...), e.g. "
                    + "new JacksonPayloadSerializer(), or pass JSON text or bytes");
        };
    }
}
