package io.txoutbox.kafka.internal;

import io.txoutbox.OutboxException;
import io.txoutbox.kafka.KafkaHeaders;
import java.nio.charset.StandardCharsets;
import java.util.UUID;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.header.Header;

/** A record's event id, read from its {@value KafkaHeaders#EVENT_ID} header or derived from its coordinates. */
public final class RecordEventIds {

    private RecordEventIds() {
    }

    /** The header's UUID; a record without the header (or with a non-UUID) fails permanently. */
    public static UUID fromHeader(ConsumerRecord<?, ?> r) {
        UUID id = header(r);
        if (id == null) {
            throw new OutboxException("record " + r.topic() + "-" + r.partition() + "@" + r.offset()
                    + " has no '" + KafkaHeaders.EVENT_ID + "' header; configure eventIds(...) for foreign "
                    + "producers");
        }
        return id;
    }

    /** The header's UUID, or the coordinates' when the record has no header. */
    public static UUID fromHeaderOrCoordinates(ConsumerRecord<?, ?> r) {
        UUID id = header(r);
        return id != null ? id : fromCoordinates(r);
    }

    /** A name-based (version 3) UUID of {@code topic/partition/offset}. */
    public static UUID fromCoordinates(ConsumerRecord<?, ?> r) {
        return UUID.nameUUIDFromBytes((r.topic() + "/" + r.partition() + "/" + r.offset())
                .getBytes(StandardCharsets.UTF_8));
    }

    private static UUID header(ConsumerRecord<?, ?> r) {
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
