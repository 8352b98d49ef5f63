package io.txoutbox.kafka;

/** Headers {@link KafkaInboxConsumer} adds to a record it sends to the dead-letter topic (UTF-8 strings). */
public final class DeadLetterHeaders {

    public static final String REASON = "dlt-reason";
    public static final String EXCEPTION = "dlt-exception";
    public static final String ORIGINAL_TOPIC = "dlt-original-topic";
    public static final String ORIGINAL_PARTITION = "dlt-original-partition";
    public static final String ORIGINAL_OFFSET = "dlt-original-offset";
    public static final String ATTEMPTS = "dlt-attempts";
    public static final String CONSUMER = "dlt-consumer";

    private DeadLetterHeaders() {
    }
}
