package io.txoutbox.kafka.internal;

import static org.assertj.core.api.Assertions.assertThat;

import io.txoutbox.internal.MessageRules;
import io.txoutbox.kafka.KafkaHeaders;
import io.txoutbox.kafka.TestRecords;
import io.txoutbox.spi.OutboxRecord;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.HashMap;
import java.util.Map;
import java.util.UUID;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.InvalidRecordException;
import org.apache.kafka.common.errors.InvalidTopicException;
import org.apache.kafka.common.errors.RecordTooLargeException;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.record.internal.AbstractRecords;
import org.apache.kafka.common.record.internal.CompressionType;
import org.apache.kafka.common.record.internal.RecordBatch;
import org.junit.jupiter.api.Test;

class RecordMapperTest {

    private final RecordMapper mapper = new RecordMapper(1_048_576, 33_554_432L);

    @Test
    void mapsKeyValueAndHeaders() {
        UUID eventId = UUID.randomUUID();
        OutboxRecord r = new OutboxRecord(1, eventId, "orders", "order-7", "Order", "7", 3L, "OrderPaid",
                "{\"a\":1}".getBytes(StandardCharsets.UTF_8), true,
                Map.of("traceparent", TestRecords.TRACEPARENT, "correlation_id", "c-1"), Instant.now(), 0);
        ProducerRecord<byte[], byte[]> k = mapper.toProducerRecord(r);
        assertThat(k.topic()).isEqualTo("orders");
        assertThat(k.partition()).isNull();
        assertThat(new String(k.key(), StandardCharsets.UTF_8)).isEqualTo("order-7");
        assertThat(new String(k.value(), StandardCharsets.UTF_8)).isEqualTo("{\"a\":1}");
        Map<String, String> headers = new HashMap<>();
        for (Header h : k.headers()) {
            assertThat(headers.put(h.key(), new String(h.value(), StandardCharsets.UTF_8))).as(h.key()).isNull();
        }
        assertThat(headers).containsExactlyInAnyOrderEntriesOf(Map.of(
                "event_id", eventId.toString(), "event_type", "OrderPaid", "aggregate_type", "Order",
                "aggregate_id", "7", "aggregate_version", "3", "traceparent", TestRecords.TRACEPARENT,
                "correlation_id", "c-1", "content_type", "application/json"));
    }

    @Test
    void nullKeyTombstoneAndNoVersionMapToNullsAndMissingHeaders() {
        OutboxRecord r = new OutboxRecord(1, UUID.randomUUID(), "orders", null, "Order", "7", null, "OrderDeleted",
                null, false, Map.of(), Instant.now(), 0);
        ProducerRecord<byte[], byte[]> k = mapper.toProducerRecord(r);
        assertThat(k.key()).isNull();
        assertThat(k.value()).isNull();
        assertThat(k.headers().lastHeader("aggregate_version")).isNull();
        assertThat(k.headers().lastHeader("content_type")).isNull();
        assertThat(mapper.problem(r)).isNull();
    }

    @Test
    void reservedHeaderNamesAreTheWritersReservedNames() {
        assertThat(KafkaHeaders.RESERVED).isEqualTo(MessageRules.RESERVED_HEADERS);
    }

    @Test
    void sizeBoundEqualsKafkasOwnEstimate() {
        byte[][] samples = {null, new byte[0], new byte[1], new byte[63], new byte[64], new byte[8191],
                new byte[8192], new byte[1_000_000]};
        Header[] headers = {new RecordHeader("event_id", new byte[36]), new RecordHeader("x", null),
                new RecordHeader("traceparent", new byte[200])};
        for (byte[] key : samples) {
            for (byte[] value : samples) {
                for (Header[] hs : new Header[][] {new Header[0], headers}) {
                    assertThat(RecordMapper.serializedSizeUpperBound(key, value, hs))
                            .isEqualTo(AbstractRecords.estimateSizeInBytesUpperBound(RecordBatch.CURRENT_MAGIC_VALUE,
                                    CompressionType.LZ4, key, value, hs));
                }
            }
        }
    }

    @Test
    void recordOverMaxRequestSizeIsAProblem() {
        RecordMapper small = new RecordMapper(10_000, 33_554_432L);
        assertThat(small.problem(TestRecords.bytes("orders", "k", new byte[9_000]))).isNull();
        assertThat(small.problem(TestRecords.bytes("orders", "k", new byte[10_000])))
                .isInstanceOf(RecordTooLargeException.class).hasMessageContaining("max.request.size");
    }

    @Test
    void illegalTopicAndReservedUserHeaderAreProblems() {
        assertThat(mapper.problem(TestRecords.bytes("bad topic!", "k", new byte[1])))
                .isInstanceOf(InvalidTopicException.class);
        OutboxRecord reserved = new OutboxRecord(1, UUID.randomUUID(), "orders", "k", "Order", "7", null, "T",
                new byte[1], false, Map.of("event_id", "forged"), Instant.now(), 0);
        assertThat(mapper.problem(reserved)).isInstanceOf(InvalidRecordException.class)
                .hasMessageContaining("event_id");
    }
}
