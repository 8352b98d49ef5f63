package io.txoutbox.kafka.internal;

import io.txoutbox.kafka.KafkaHeaders;
import io.txoutbox.spi.OutboxRecord;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Pattern;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.InvalidRecordException;
import org.apache.kafka.common.errors.InvalidTopicException;
import org.apache.kafka.common.errors.RecordTooLargeException;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;

/**
 * Turns an {@link OutboxRecord} into a Kafka record and checks, before anything of its batch is sent, what the
 * producer would reject on its own: the topic name and the serialized size. A record that fails here is never handed
 * to the producer, so it cannot abort the batch's transaction.
 */
final class RecordMapper {

    /** Kafka's topic alphabet and length (the same rule the writer applies). */
    private static final Pattern TOPIC = Pattern.compile("[a-zA-Z0-9._-]{1,249}");

    /** DefaultRecordBatch.RECORD_BATCH_OVERHEAD of the v2 record format. */
    static final int RECORD_BATCH_OVERHEAD = 61;

    private final int maxRequestSize;
    private final long bufferMemory;

    RecordMapper(int maxRequestSize, long bufferMemory) {
        this.maxRequestSize = maxRequestSize;
        this.bufferMemory = bufferMemory;
    }

    /** The Kafka record: key as UTF-8, value unchanged (null = tombstone), the txoutbox headers and the user's. */
    ProducerRecord<byte[], byte[]> toProducerRecord(OutboxRecord record) {
        byte[] key = record.key() == null ? null : record.key().getBytes(StandardCharsets.UTF_8);
        return new ProducerRecord<>(record.topic(), null, null, key, record.value(), headers(record));
    }

    List<Header> headers(OutboxRecord record) {
        List<Header> headers = new ArrayList<>(6 + record.headers().size());
        headers.add(header(KafkaHeaders.EVENT_ID, record.eventId().toString()));
        addIfPresent(headers, KafkaHeaders.EVENT_TYPE, record.eventType());
        addIfPresent(headers, KafkaHeaders.AGGREGATE_TYPE, record.aggregateType());
        addIfPresent(headers, KafkaHeaders.AGGREGATE_ID, record.aggregateId());
        if (record.aggregateVersion() != null) {
            headers.add(header(KafkaHeaders.AGGREGATE_VERSION, record.aggregateVersion().toString()));
        }
        for (Map.Entry<String, String> h : record.headers().entrySet()) {
            headers.add(header(h.getKey(), h.getValue()));
        }
        if (record.json() && !record.headers().containsKey(KafkaHeaders.CONTENT_TYPE)) {
            headers.add(header(KafkaHeaders.CONTENT_TYPE, KafkaHeaders.JSON));
        }
        return headers;
    }

    /**
     * What makes this record unsendable whatever the broker's state, or null. The exception types are the ones the
     * producer itself would raise, so classification treats both paths alike.
     */
    RuntimeException problem(OutboxRecord record) {
        if (record.eventId() == null) {
            return new InvalidRecordException("record at outbox id " + record.id() + " has no event id");
        }
        String topic = record.topic();
        if (topic == null || !TOPIC.matcher(topic).matches() || topic.equals(".") || topic.equals("..")) {
            return new InvalidTopicException("event " + record.eventId() + ": topic '" + topic
                    + "' is not a valid Kafka topic name (1 to 249 characters from [a-zA-Z0-9._-], not '.' or '..')");
        }
        for (String name : record.headers().keySet()) {
            String lower = name.toLowerCase(Locale.ROOT);
            if (KafkaHeaders.RESERVED.contains(lower) || (lower.startsWith("txoutbox") && !name.equals(KafkaHeaders.REPLAY))) {
                return new InvalidRecordException("event " + record.eventId() + ": user header '" + name
                        + "' has a name txoutbox writes itself " + KafkaHeaders.RESERVED
                        + "; rename it in the stored row");
            }
        }
        ProducerRecord<byte[], byte[]> kafkaRecord = toProducerRecord(record);
        int size = serializedSizeUpperBound(kafkaRecord.key(), kafkaRecord.value(), kafkaRecord.headers().toArray());
        if (size > maxRequestSize) {
            return new RecordTooLargeException("event " + record.eventId() + " is " + size
                    + " bytes when serialized, more than max.request.size (" + maxRequestSize
                    + "); shrink the payload or raise max.request.size (and the topic's max.message.bytes)");
        }
        if (size > bufferMemory) {
            return new RecordTooLargeException("event " + record.eventId() + " is " + size
                    + " bytes when serialized, more than buffer.memory (" + bufferMemory + ")");
        }
        return null;
    }

    /**
     * The bound KafkaProducer checks against max.request.size: one v2 batch holding this record alone, with the
     * largest possible offset and timestamp deltas. Kept in step with Kafka's internal estimate by a test.
     */
    static int serializedSizeUpperBound(byte[] key, byte[] value, Header[] headers) {
        int body = 5 // record length, varint upper bound
                + 1 // attributes
                + 10 // timestamp delta, varlong upper bound
                + 5; // offset delta, varint upper bound
        body += key == null ? 1 : varintSize(key.length) + key.length;
        body += value == null ? 1 : varintSize(value.length) + value.length;
        body += varintSize(headers.length);
        for (Header h : headers) {
            byte[] name = h.key().getBytes(StandardCharsets.UTF_8);
            body += varintSize(name.length) + name.length;
            body += h.value() == null ? 1 : varintSize(h.value().length) + h.value().length;
        }
        return RECORD_BATCH_OVERHEAD + body;
    }

    /** Size of a zig-zag encoded varint. */
    static int varintSize(int value) {
        int v = (value << 1) ^ (value >> 31);
        int bytes = 1;
        while ((v & 0xffffff80) != 0) {
            bytes++;
            v >>>= 7;
        }
        return bytes;
    }

    private static void addIfPresent(List<Header> headers, String name, String value) {
        if (value != null) {
            headers.add(header(name, value));
        }
    }

    private static Header header(String name, String value) {
        return new RecordHeader(name, value == null ? null : value.getBytes(StandardCharsets.UTF_8));
    }
}
