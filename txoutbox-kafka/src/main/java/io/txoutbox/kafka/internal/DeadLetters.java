package io.txoutbox.kafka.internal;

import io.txoutbox.kafka.KafkaHeaders;
import io.txoutbox.kafka.KafkaInboxConsumer;
import io.txoutbox.kafka.KafkaInboxConsumerConfig;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The inbox consumer's dead-letter sender: records that cannot be stored or handled go to the dead-letter topic with
 * the reason, the original topic/partition/offset, the attempts and the exception class in headers
 * ({@code KafkaHeaders.DLT_*}); the send waits for the broker's acknowledgements, so a failure reads the batch again.
 * Made and closed on the loop thread.
 */
final class DeadLetters implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(KafkaInboxConsumer.class);
    private static final int MAX_ERROR_LENGTH = 1000;
    /** How long a record's dead-lettering waits for the broker's acknowledgement. */
    static final Duration SEND_TIMEOUT = Duration.ofSeconds(30);

    /** A record that goes to the dead-letter topic (or, in store mode without one, to a DEAD inbox row). */
    record Rejected(ConsumerRecord<byte[], byte[]> record, Throwable cause, int attempts) {
    }

    private final KafkaInboxConsumerConfig config;
    private final ConsumerCounters counters;
    private final KafkaProducer<byte[], byte[]> producer;

    DeadLetters(KafkaInboxConsumerConfig config, ConsumerCounters counters) {
        this.config = config;
        this.counters = counters;
        this.producer = new KafkaProducer<>(ConsumerClients.producerProperties(config));
    }

    /** Sends rejected records to the dead-letter topic and waits for the acks (a failure reads the batch again). */
    void send(List<Rejected> rejected) throws Exception {
        if (rejected.isEmpty()) {
            return;
        }
        List<Future<RecordMetadata>> acks = new ArrayList<>();
        for (Rejected x : rejected) {
            ConsumerRecord<byte[], byte[]> r = x.record;
            RecordHeaders headers = new RecordHeaders();
            for (Header h : r.headers()) {
                if (!h.key().startsWith("dlt-")) {
                    headers.add(h);
                }
            }
            headers.add(KafkaHeaders.DLT_REASON, utf8(truncate(String.valueOf(x.cause.getMessage()))));
            headers.add(KafkaHeaders.DLT_EXCEPTION, utf8(x.cause.getClass().getName()));
            headers.add(KafkaHeaders.DLT_ORIGINAL_TOPIC, utf8(r.topic()));
            headers.add(KafkaHeaders.DLT_ORIGINAL_PARTITION, utf8(Integer.toString(r.partition())));
            headers.add(KafkaHeaders.DLT_ORIGINAL_OFFSET, utf8(Long.toString(r.offset())));
            headers.add(KafkaHeaders.DLT_ATTEMPTS, utf8(Integer.toString(x.attempts)));
            headers.add(KafkaHeaders.DLT_CONSUMER, utf8(config.consumer()));
            acks.add(producer.send(new ProducerRecord<>(config.deadLetterTopic(), null, r.key(), r.value(), headers)));
        }
        producer.flush();
        for (Future<RecordMetadata> f : acks) {
            f.get(SEND_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS); // a failure reads the batch again
        }
        counters.deadLettered.add(rejected.size());
    }

    @Override
    public void close() {
        try {
            producer.close(Duration.ofSeconds(10));
        } catch (RuntimeException e) {
            log.warn("txoutbox-kafka-inbox {}: producer did not close cleanly: {}", config.name(), e.toString());
        }
    }

    private static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    private static String truncate(String s) {
        return s.length() <= MAX_ERROR_LENGTH ? s : s.substring(0, MAX_ERROR_LENGTH) + "…";
    }
}
