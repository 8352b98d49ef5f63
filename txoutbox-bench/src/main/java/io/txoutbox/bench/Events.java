package io.txoutbox.bench;

import io.txoutbox.OutboxMessage;
import io.txoutbox.kafka.KafkaHeaders;
import java.nio.charset.StandardCharsets;
import java.util.UUID;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.internals.RecordHeaders;

/**
 * The benchmark's events: an order-like JSON payload padded to a fixed size, keys {@code k-0000 …} spread
 * round-robin, a {@code traceparent} user header. The same content goes through the outbox and through the raw
 * producer, with the headers the Kafka transport writes.
 */
final class Events {

    static final String AGGREGATE_TYPE = "Order";
    static final String EVENT_TYPE = "OrderPlaced";
    static final String TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    private final int keys;
    private final int payloadBytes;

    Events(int keys, int payloadBytes) {
        this.keys = keys;
        this.payloadBytes = payloadBytes;
    }

    String key(long i) {
        return String.format("k-%04d", i % keys);
    }

    /** A JSON object of exactly {@code payloadBytes} bytes (or a little more if that is too small). */
    String payload(long i) {
        StringBuilder sb = new StringBuilder(payloadBytes + 16);
        sb.append("{\"orderId\":\"o-").append(i).append("\",\"customerId\":\"").append(key(i))
                .append("\",\"amount\":").append(1000 + i % 9000).append(".50,\"currency\":\"EUR\",")
                .append("\"items\":[{\"sku\":\"SKU-").append(i % 977).append("\",\"qty\":").append(1 + i % 5)
                .append("}],\"note\":\"");
        while (sb.length() < payloadBytes - 2) {
            sb.append((char) ('a' + (sb.length() * 31 + i) % 26));
        }
        return sb.append("\"}").toString();
    }

    OutboxMessage message(String topic, long i) {
        return OutboxMessage.builder().topic(topic).aggregate(AGGREGATE_TYPE, key(i)).eventType(EVENT_TYPE)
                .jsonPayload(payload(i)).header("traceparent", TRACEPARENT).build();
    }

    OutboxMessage message(String topic, long i, String extraHeader, String extraValue) {
        return OutboxMessage.builder().topic(topic).aggregate(AGGREGATE_TYPE, key(i)).eventType(EVENT_TYPE)
                .jsonPayload(payload(i)).header("traceparent", TRACEPARENT).header(extraHeader, extraValue).build();
    }

    /** What the raw producer sends for event {@code i}: same key, value and headers as {@code RecordMapper} writes. */
    ProducerRecord<byte[], byte[]> record(String topic, long i, UUID eventId, byte[] value) {
        String key = key(i);
        return new ProducerRecord<>(topic, null, key.getBytes(StandardCharsets.UTF_8), value,
                headers(eventId.toString(), key, TRACEPARENT));
    }

    static RecordHeaders headers(String eventId, String aggregateId, String traceparent) {
        RecordHeaders h = new RecordHeaders();
        h.add(KafkaHeaders.EVENT_ID, eventId.getBytes(StandardCharsets.UTF_8));
        h.add(KafkaHeaders.EVENT_TYPE, EVENT_TYPE.getBytes(StandardCharsets.UTF_8));
        h.add(KafkaHeaders.AGGREGATE_TYPE, AGGREGATE_TYPE.getBytes(StandardCharsets.UTF_8));
        h.add(KafkaHeaders.AGGREGATE_ID, aggregateId.getBytes(StandardCharsets.UTF_8));
        if (traceparent != null) {
            h.add("traceparent", traceparent.getBytes(StandardCharsets.UTF_8));
        }
        h.add(KafkaHeaders.CONTENT_TYPE, KafkaHeaders.JSON.getBytes(StandardCharsets.UTF_8));
        return h;
    }
}
