package io.txoutbox;

import io.txoutbox.internal.config.Checks;
import io.txoutbox.internal.config.DescriptorBuilder;
import io.txoutbox.internal.config.Values;
import io.txoutbox.spi.PayloadSerializer;

/**
 * The writer's validated, immutable configuration.
 *
 * @param schema          where the outbox table is
 * @param serializer      turns object payloads into JSON or bytes
 * @param maxPayloadBytes largest payload in bytes
 * @param maxHeaderBytes  largest sum of header names and values in bytes
 * @param notifyOnPublish whether each publishing transaction also {@code NOTIFY}s the relay's channel
 */
public record OutboxConfig(OutboxSchema schema, PayloadSerializer serializer, int maxPayloadBytes,
        int maxHeaderBytes, boolean notifyOnPublish) {

    /** Under Kafka's default {@code message.max.bytes} (1,048,588) with room for key and headers. */
    public static final int DEFAULT_MAX_PAYLOAD_BYTES = 1_000_000;
    public static final int DEFAULT_MAX_HEADER_BYTES = 16_384;
    /** PostgreSQL's own limit for one field value. */
    public static final int MAX_PAYLOAD_BYTES_LIMIT = 1 << 30;
    /** Off: NOTIFY takes a cluster-wide lock through the commit (0.42x commit throughput with 8 writers here). */
    public static final boolean DEFAULT_NOTIFY_ON_PUBLISH = false;

    /** Every setting of the writer ({@code txoutbox.outbox.*}); the schema is {@link OutboxSchema#DESCRIPTOR}'s. */
    public static final ConfigDescriptor<Outbox.Builder, OutboxConfig> DESCRIPTOR =
            DescriptorBuilder.<Outbox.Builder, OutboxConfig>define("outbox")
                    .add("maxPayloadBytes", Integer.class, DEFAULT_MAX_PAYLOAD_BYTES, "bytes", "Largest payload "
                            + "(UTF-8 for JSON); below " + Values.formatBytes(MAX_PAYLOAD_BYTES_LIMIT),
                            Outbox.Builder::maxPayloadBytes, OutboxConfig::maxPayloadBytes)
                    .add("maxHeaderBytes", Integer.class, DEFAULT_MAX_HEADER_BYTES, "bytes", "Largest sum of "
                            + "header names and values in UTF-8", Outbox.Builder::maxHeaderBytes,
                            OutboxConfig::maxHeaderBytes)
                    .add("notifyOnPublish", Boolean.class, DEFAULT_NOTIFY_ON_PUBLISH, "", "Also NOTIFY the "
                            + "relay's channel in each publishing transaction (pair with the relay's listen-notify)",
                            Outbox.Builder::notifyOnPublish, OutboxConfig::notifyOnPublish)
                    .build();

    public OutboxConfig {
        Checks.schema("outbox", schema);
        Checks.notNull("outbox.payloadSerializer", serializer);
        Checks.between("outbox.maxPayloadBytes", maxPayloadBytes, 1, MAX_PAYLOAD_BYTES_LIMIT - 1);
        Checks.atLeast("outbox.maxHeaderBytes", maxHeaderBytes, 0);
    }

    /** A writer that does not {@code NOTIFY} ({@link #DEFAULT_NOTIFY_ON_PUBLISH}). */
    public OutboxConfig(OutboxSchema schema, PayloadSerializer serializer, int maxPayloadBytes, int maxHeaderBytes) {
        this(schema, serializer, maxPayloadBytes, maxHeaderBytes, DEFAULT_NOTIFY_ON_PUBLISH);
    }

    @Override
    public String toString() {
        return "OutboxConfig[schema=" + schema + ", serializer=" + serializer.getClass().getSimpleName()
                + ", maxPayloadBytes=" + maxPayloadBytes + ", maxHeaderBytes=" + maxHeaderBytes
                + ", notifyOnPublish=" + notifyOnPublish + "]";
    }
}
