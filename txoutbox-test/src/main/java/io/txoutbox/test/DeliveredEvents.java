package io.txoutbox.test;

import io.txoutbox.spi.OutboxRecord;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;

/**
 * Assertions over delivered records that throw {@link AssertionError} with a readable message, usable with any test
 * framework:
 *
 * <pre>{@code
 * DeliveredEvents.of(transport.delivered("orders"))
 *         .assertNoDuplicates()
 *         .assertKeyOrder("order-1", "OrderCreated", "OrderPaid")
 *         .assertPayloadContains(eventId, "\"amount\":42");
 * }</pre>
 */
public final class DeliveredEvents {

    private final List<OutboxRecord> records;

    private DeliveredEvents(List<OutboxRecord> records) {
        this.records = List.copyOf(records);
    }

    public static DeliveredEvents of(List<OutboxRecord> records) {
        return new DeliveredEvents(records);
    }

    public List<OutboxRecord> records() {
        return records;
    }

    /** Event types of one key's first deliveries, in delivery order. */
    public List<String> eventTypesOfKey(String key) {
        List<String> types = new ArrayList<>();
        java.util.Set<UUID> seen = new java.util.HashSet<>();
        for (OutboxRecord r : records) {
            if (key.equals(r.key()) && seen.add(r.eventId())) {
                types.add(r.eventType());
            }
        }
        return types;
    }

    public DeliveredEvents assertCount(int expected) {
        if (records.size() != expected) {
            throw new AssertionError("expected " + expected + " delivered record(s), found " + records.size());
        }
        return this;
    }

    public DeliveredEvents assertNoDuplicates() {
        Map<UUID, Integer> copies = new HashMap<>();
        for (OutboxRecord r : records) {
            copies.merge(r.eventId(), 1, Integer::sum);
        }
        Map<UUID, Integer> dups = new LinkedHashMap<>();
        copies.forEach((id, n) -> {
            if (n > 1) {
                dups.put(id, n);
            }
        });
        if (!dups.isEmpty()) {
            throw new AssertionError("events delivered more than once (event id = copies): " + dups);
        }
        return this;
    }

    /** The first deliveries of the key's events have exactly these event types, in this order. */
    public DeliveredEvents assertKeyOrder(String key, String... eventTypes) {
        List<String> actual = eventTypesOfKey(key);
        if (!actual.equals(List.of(eventTypes))) {
            throw new AssertionError("key " + key + ": expected event types " + List.of(eventTypes)
                    + " in this order, delivered " + actual);
        }
        return this;
    }

    public DeliveredEvents assertPayloadContains(UUID eventId, String fragment) {
        OutboxRecord r = records.stream().filter(x -> x.eventId().equals(eventId)).findFirst()
                .orElseThrow(() -> new AssertionError("event " + eventId + " was not delivered"));
        String text = r.value() == null ? "" : new String(r.value(), StandardCharsets.UTF_8);
        if (!text.contains(fragment)) {
            throw new AssertionError("payload of event " + eventId + " does not contain " + fragment);
        }
        return this;
    }
}
