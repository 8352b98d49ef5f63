package io.txoutbox.kafka.internal;

import io.txoutbox.InboxEvent;
import io.txoutbox.InboxMessage;
import io.txoutbox.OutboxException;
import io.txoutbox.internal.inbox.InboxBytes;
import io.txoutbox.kafka.KafkaHeaders;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.UUID;
import java.util.function.Function;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.header.Header;

/**
 * Kafka records as inbox messages, the same way in both modes. The key and the header values stay bytes
 * ({@link InboxMessage#keyBytes}, {@link InboxMessage#headerBytes}); the event type and aggregate columns get their
 * headers' text forms.
 */
public final class InboxMessages {

    private final Function<ConsumerRecord<byte[], byte[]>, UUID> eventIds;

    InboxMessages(Function<ConsumerRecord<byte[], byte[]>, UUID> eventIds) {
        this.eventIds = eventIds;
    }

    /**
     * A record of any key and value type as an inbox message, its id from the {@code event_id} header or else its
     * coordinates: keys and values that are {@code byte[]} stay as they are, {@code String}s become UTF-8.
     */
    public static InboxMessage of(ConsumerRecord<?, ?> r) {
        ConsumerRecord<byte[], byte[]> bytes = new ConsumerRecord<>(r.topic(), r.partition(), r.offset(),
                r.timestamp(), r.timestampType(), r.serializedKeySize(), r.serializedValueSize(), bytes(r, r.key()),
                bytes(r, r.value()), r.headers(), r.leaderEpoch());
        return new InboxMessages(RecordEventIds::fromHeaderOrCoordinates).toMessage(bytes);
    }

    private static byte[] bytes(ConsumerRecord<?, ?> r, Object value) {
        if (value == null || value instanceof byte[]) {
            return (byte[]) value;
        }
        if (value instanceof String s) {
            return s.getBytes(java.nio.charset.StandardCharsets.UTF_8);
        }
        throw new IllegalArgumentException("record " + r.topic() + "-" + r.partition() + "@" + r.offset() + " has a "
                + value.getClass().getName() + " key or value: the inbox stores bytes; consume with "
                + "ByteArrayDeserializer or StringDeserializer");
    }

    /** The record as an inbox message; an unreadable event id or version header throws. */
    InboxMessage toMessage(ConsumerRecord<byte[], byte[]> r) {
        UUID eventId = Objects.requireNonNull(eventIds.apply(r), "eventIds returned null");
        Map<String, byte[]> headerBytes = headerBytes(r);
        Map<String, String> headers = InboxBytes.textHeaders(headerBytes);
        Long version = null;
        String v = headers.get(KafkaHeaders.AGGREGATE_VERSION);
        if (v != null) {
            try {
                version = Long.parseLong(v);
            } catch (NumberFormatException e) {
                throw new OutboxException("record " + r.topic() + "-" + r.partition() + "@" + r.offset() + " has an '"
                        + KafkaHeaders.AGGREGATE_VERSION + "' header that is not a number", e);
            }
        }
        return message(eventId, r, headerBytes, headers, version);
    }

    /** A rejected record as a message for its DEAD row: no version, and the coordinates' id if its own is unreadable. */
    InboxMessage toLenientMessage(ConsumerRecord<byte[], byte[]> r) {
        UUID eventId;
        try {
            eventId = Objects.requireNonNull(eventIds.apply(r));
        } catch (RuntimeException e) {
            eventId = RecordEventIds.fromCoordinates(r);
        }
        Map<String, byte[]> headerBytes = headerBytes(r);
        return message(eventId, r, headerBytes, InboxBytes.textHeaders(headerBytes), null);
    }

    /** Handle mode: the event the handler sees, with the record's failed attempts so far. */
    static InboxEvent toEvent(String consumer, InboxMessage m, ConsumerRecord<byte[], byte[]> r, int attempts) {
        return new InboxEvent(0, consumer, m.eventId(), m.key(), m.eventType(), m.aggregateType(),
                m.aggregateId(), m.aggregateVersion(), m.payload(), m.headers(), r.topic(), r.partition(), r.offset(),
                Instant.ofEpochMilli(r.timestamp()), attempts, m.keyBytes(), m.headerBytes());
    }

    private static InboxMessage message(UUID eventId, ConsumerRecord<byte[], byte[]> r, Map<String, byte[]> headerBytes,
            Map<String, String> headers, Long version) {
        return InboxMessage.builder(eventId).key(r.key()).eventType(headers.get(KafkaHeaders.EVENT_TYPE))
                .aggregate(headers.get(KafkaHeaders.AGGREGATE_TYPE), headers.get(KafkaHeaders.AGGREGATE_ID), version)
                .payload(r.value()).headerBytes(headerBytes).source(r.topic(), r.partition(), r.offset()).build();
    }

    /** The record's headers by name, in order, values exactly as they came (a repeated name keeps its last value). */
    private static Map<String, byte[]> headerBytes(ConsumerRecord<byte[], byte[]> r) {
        Map<String, byte[]> headerBytes = new LinkedHashMap<>();
        for (Header h : r.headers()) {
            headerBytes.put(h.key(), h.value());
        }
        return headerBytes;
    }
}
