package io.txoutbox.kafka;

import java.util.Set;

/**
 * Names of the Kafka headers {@link KafkaTransport} writes on every record, and ({@code DLT_*}) of those
 * {@link KafkaInboxConsumer} adds to a record it sends to the dead-letter topic. Values are UTF-8 strings. User
 * headers of an event ({@code traceparent}, correlation ids, …) are passed through unchanged next to these.
 */
public final class KafkaHeaders {

    /** The event's UUID, the consumers' dedupe key. */
    public static final String EVENT_ID = "event_id";
    public static final String EVENT_TYPE = "event_type";
    public static final String AGGREGATE_TYPE = "aggregate_type";
    public static final String AGGREGATE_ID = "aggregate_id";
    /** Decimal per-aggregate version; only present when the event has one. */
    public static final String AGGREGATE_VERSION = "aggregate_version";
    /** {@value #JSON} for JSON payloads, unless the event carries its own {@code content_type} header. */
    public static final String CONTENT_TYPE = "content_type";
    public static final String JSON = "application/json";

    /** Set on records sent by an {@code OutboxReplay}; the value is the replay's name. */
    public static final String REPLAY = io.txoutbox.OutboxReplay.REPLAY_HEADER;

    /** The names a user header may not take (the writer rejects them; the transport refuses rows that have them). */
    public static final Set<String> RESERVED =
            Set.of(EVENT_ID, EVENT_TYPE, AGGREGATE_TYPE, AGGREGATE_ID, AGGREGATE_VERSION);

    /** Dead-letter topic: why the record failed (the exception's message, cut at 1000 characters). */
    public static final String DLT_REASON = "dlt-reason";
    /** Dead-letter topic: the class name of the exception. */
    public static final String DLT_EXCEPTION = "dlt-exception";
    public static final String DLT_ORIGINAL_TOPIC = "dlt-original-topic";
    public static final String DLT_ORIGINAL_PARTITION = "dlt-original-partition";
    public static final String DLT_ORIGINAL_OFFSET = "dlt-original-offset";
    /** Dead-letter topic: the attempts made before the record was sent there. */
    public static final String DLT_ATTEMPTS = "dlt-attempts";
    /** Dead-letter topic: the inbox consumer name that gave up on the record. */
    public static final String DLT_CONSUMER = "dlt-consumer";

    private KafkaHeaders() {
    }
}
