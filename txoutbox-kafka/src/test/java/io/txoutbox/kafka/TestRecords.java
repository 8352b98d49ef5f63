package io.txoutbox.kafka;

import io.txoutbox.spi.OutboxRecord;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicLong;

/** Outbox records for tests. */
public final class TestRecords {

    public static final String TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    private static final AtomicLong ids = new AtomicLong();

    private TestRecords() {
    }

    public static OutboxRecord json(String topic, String key, String json) {
        long id = ids.incrementAndGet();
        return new OutboxRecord(id, UUID.randomUUID(), topic, key, "Order", key == null ? "none" : key, id,
                "OrderChanged", json.getBytes(StandardCharsets.UTF_8), true, Map.of("traceparent", TRACEPARENT),
                Instant.now(), 0);
    }

    public static OutboxRecord bytes(String topic, String key, byte[] value) {
        long id = ids.incrementAndGet();
        return new OutboxRecord(id, UUID.randomUUID(), topic, key, "Order", key == null ? "none" : key, null,
                "OrderBlob", value, false, Map.of(), Instant.now(), 0);
    }
}
