package io.txoutbox;

import io.txoutbox.spi.PayloadSerializer;
import java.util.Objects;

/**
 * The writer's validated, immutable configuration.
 *
 * @param schema          where the outbox table is
 * @param serializer      turns object payloads into JSON or bytes
 * @param maxPayloadBytes largest payload in bytes
 * @param maxHeaderBytes  largest sum of header names and values in bytes
 */
public record OutboxConfig(OutboxSchema schema, PayloadSerializer serializer, int maxPayloadBytes,
        int maxHeaderBytes) {

    /** Under Kafka's default {@code message.max.bytes} (1,048,588) with room for key and headers. */
    public static final int DEFAULT_MAX_PAYLOAD_BYTES = 1_000_000;
    public static final int DEFAULT_MAX_HEADER_BYTES = 16_384;
    /** PostgreSQL's own limit for one field value. */
    public static final int MAX_PAYLOAD_BYTES_LIMIT = 1 << 30;

    public OutboxConfig {
        Objects.requireNonNull(schema, "outbox.schema must not be null");
        Objects.requireNonNull(serializer, "outbox.payloadSerializer must not be null");
        if (maxPayloadBytes < 1 || maxPayloadBytes >= MAX_PAYLOAD_BYTES_LIMIT) {
            throw new InvalidConfigurationException("outbox.maxPayloadBytes must be between 1 and "
                    + (MAX_PAYLOAD_BYTES_LIMIT - 1) + ", was " + maxPayloadBytes);
        }
        if (maxHeaderBytes < 0) {
            throw new InvalidConfigurationException("outbox.maxHeaderBytes must be >= 0, was " + maxHeaderBytes);
        }
    }

    @Override
    public String toString() {
        return "OutboxConfig[schema=" + schema + ", serializer=" + serializer.getClass().getSimpleName()
                + ", maxPayloadBytes=" + maxPayloadBytes + ", maxHeaderBytes=" + maxHeaderBytes + "]";
    }
}
