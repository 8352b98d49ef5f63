package io.txoutbox.test.acceptance;

import java.util.Map;
import java.util.UUID;

/**
 * One record as the transport under test delivered it, read back from where it went (the in-memory list, a Kafka
 * topic): what the acceptance suite judges, whatever the transport.
 *
 * @param topic     where it went
 * @param key       its partition key, or {@code null}
 * @param eventId   the outbox event id it carries
 * @param eventType the event type it carries
 * @param payload   the value as UTF-8 text, or {@code null}
 * @param headers   its headers as text
 */
public record Sent(String topic, String key, UUID eventId, String eventType, String payload,
        Map<String, String> headers) {

    public Sent {
        headers = Map.copyOf(headers);
    }
}
