package io.txoutbox.kafka;

import io.txoutbox.OutboxException;
import java.nio.charset.StandardCharsets;
import java.util.UUID;
import java.util.function.Function;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.header.Header;

/**
 * Ways to get a record's event id (the dedupe key) for {@link KafkaInboxConsumer}. The txoutbox relay writes it in the
 * {@value KafkaHeaders#EVENT_ID} header; records of other producers need one derived.
 */
public final class EventIds {

    private EventIds() {
    }

    /** The {@value KafkaHeaders#EVENT_ID} header; a record without it (or with a non-UUID) fails permanently. */
    public static Function<ConsumerRecord<byte[], byte[]>, UUID> fromHeader() {
        return r -> {
            UUID id = header(r);
            if (id == null) {
                throw new OutboxException("record " + r.topic() + "-" + r.partition() + "@" + r.offset()
                        + " has no '" + KafkaHeaders.EVENT_ID + "' header; configure eventIds(...) for foreign "
                        + "producers");
            }
            return id;
        };
    }

    /**
     * The {@value KafkaHeaders#EVENT_ID} header, or, when there is none, a name-based UUID of the record's topic,
     * partition and offset (the default). The derived id is the same on every redelivery of that Kafka record, so
     * redeliveries are deduped; a foreign producer that sends the same message twice makes two records and two ids —
     * derive from a business key of the payload instead when that matters.
     */
    public static Function<ConsumerRecord<byte[], byte[]>, UUID> fromHeaderOrCoordinates() {
        return r -> {
            UUID id = header(r);
            return id != null ? id : fromCoordinates(r);
        };
    }

    /** A name-based (version 3) UUID of {@code topic/partition/offset}. */
    public static UUID fromCoordinates(ConsumerRecord<?, ?> r) {
        return UUID.nameUUIDFromBytes((r.topic() + "/" + r.partition() + "/" + r.offset())
                .getBytes(StandardCharsets.UTF_8));
    }

    private static UUID header(ConsumerRecord<byte[], byte[]> r) {
        Header h = r.headers().lastHeader(KafkaHeaders.EVENT_ID);
        if (h == null || h.value() == null) {
            return null;
        }
        String text = new String(h.value(), StandardCharsets.UTF_8);
        try {
            return UUID.fromString(text);
        } catch (IllegalArgumentException e) {
            throw new OutboxException("record " + r.topic() + "-" + r.partition() + "@" + r.offset() + " has an '"
                    + KafkaHeaders.EVENT_ID + "' header that is not a UUID", e);
        }
    }
}
