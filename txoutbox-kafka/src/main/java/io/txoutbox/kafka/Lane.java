package io.txoutbox.kafka;

import io.txoutbox.OutboxException;
import io.txoutbox.spi.OutboxRecord;
import io.txoutbox.spi.SendResult;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.function.Function;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.errors.InterruptException;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One relay lane: its transactional producer and the batch algorithm. Only the lane's own thread calls
 * {@link #sendBatch}; the producer is created there on first use and replaced after fencing or a fatal error.
 *
 * <p>Each batch is one Kafka transaction. Records that cannot be sent are failed before the transaction starts
 * (and the later records of their key with them), so they cannot abort it. If anything fails inside the transaction,
 * it is aborted: nothing of the batch becomes visible to {@code read_committed} consumers, the failing record is
 * classified and every other record is reported {@code COLLATERAL}. Per-key order therefore holds whatever the
 * producer does internally after an error: a batch is all or nothing.
 */
final class Lane {

    private static final Logger log = LoggerFactory.getLogger(Lane.class);

    private final String lane;
    private final KafkaTransportConfig config;
    private final RecordMapper mapper;
    private final TopicProbe topicProbe;
    private final Function<Map<String, Object>, Producer<byte[], byte[]>> producerFactory;
    private volatile Producer<byte[], byte[]> producer;
    private volatile boolean closed;

    Lane(String lane, KafkaTransportConfig config, RecordMapper mapper, TopicProbe topicProbe,
            Function<Map<String, Object>, Producer<byte[], byte[]>> producerFactory) {
        this.lane = lane;
        this.config = config;
        this.mapper = mapper;
        this.topicProbe = topicProbe;
        this.producerFactory = producerFactory;
    }

    static Producer<byte[], byte[]> kafkaProducer(Map<String, Object> props) {
        return new KafkaProducer<>(props, new ByteArraySerializer(), new ByteArraySerializer());
    }

    /** Sends one batch as one transaction; never throws, always one result per record in batch order. */
    List<SendResult> sendBatch(List<OutboxRecord> batch) {
        SendResult[] results = new SendResult[batch.size()];
        List<Integer> sendable = new ArrayList<>(batch.size());
        List<ProducerRecord<byte[], byte[]>> records = new ArrayList<>(batch.size());
        Map<String, UUID> stoppedKeys = new HashMap<>();
        for (int i = 0; i < batch.size(); i++) {
            OutboxRecord r = batch.get(i);
            UUID blocker = r.key() == null ? null : stoppedKeys.get(r.key());
            if (blocker != null) {
                results[i] = SendResult.collateral(new OutboxException("event " + r.eventId()
                        + " not sent: the earlier event " + blocker + " of its key failed in this batch"));
                continue;
            }
            RuntimeException problem = mapper.problem(r);
            if (problem != null) {
                log.warn("txoutbox-kafka: lane {}: event {} (outbox id {}) cannot be sent: {}", lane, r.eventId(),
                        r.id(), problem.getMessage());
                results[i] = SendResult.permanent(problem);
                if (r.key() != null) {
                    stoppedKeys.put(r.key(), r.eventId());
                }
                continue;
            }
            sendable.add(i);
            records.add(mapper.toProducerRecord(r));
        }
        if (!sendable.isEmpty()) {
            try {
                sendInTransaction(batch, sendable, records, results);
            } catch (Throwable t) {
                // a bug or an Error: the transaction's state is unknown, so the producer goes and the batch is retried
                log.error("txoutbox-kafka: lane {}: unexpected failure sending a batch of {} records", lane,
                        sendable.size(), t);
                discardProducer();
                fill(results, sendable, SendResult.retriable(t));
            }
        }
        return Arrays.asList(results);
    }

    private void sendInTransaction(List<OutboxRecord> batch, List<Integer> sendable,
            List<ProducerRecord<byte[], byte[]>> records, SendResult[] results) {
        Producer<byte[], byte[]> p;
        try {
            p = producer();
        } catch (RuntimeException e) {
            log.warn("txoutbox-kafka: lane {}: no producer ({}); {} records will be retried", lane, e.toString(),
                    sendable.size());
            fill(results, sendable,
                    SendResult.unavailable(batchFailure("could not start the transactional producer", e)));
            return;
        }
        BatchAttempt attempt = new BatchAttempt(records.size());
        RuntimeException thrown = null;
        try {
            p.beginTransaction();
            for (int k = 0; k < records.size() && !attempt.failed(); k++) {
                p.send(records.get(k), attempt.callback(k));
            }
        } catch (RuntimeException e) {
            thrown = e;
        }
        if (thrown == null && !attempt.failed()) {
            try {
                p.commitTransaction();
                for (int k = 0; k < sendable.size(); k++) {
                    RecordMetadata md = attempt.metadata(k);
                    results[sendable.get(k)] = md == null ? SendResult.delivered()
                            : new SendResult.Delivered(md.partition(), md.offset());
                }
                return;
            } catch (RuntimeException e) {
                thrown = e;
                if (e instanceof TimeoutException || e instanceof InterruptException || Failures.isFatal(e)
                        || attempt.anyFenced()) {
                    // a commit that timed out may still complete; only a new producer's initTransactions settles it
                    giveUp(batch, sendable, results, e, attempt);
                    return;
                }
            }
        }
        if ((thrown != null && Failures.isFatal(thrown)) || attempt.anyFenced()
                || thrown instanceof InterruptException) {
            giveUp(batch, sendable, results, thrown != null ? thrown : attempt.anyError(), attempt);
            return;
        }
        try {
            p.abortTransaction();
        } catch (RuntimeException e) {
            giveUp(batch, sendable, results, e, attempt);
            return;
        }
        classifyAborted(batch, sendable, results, attempt, thrown);
    }

    /** After a successful abort: the culprits get their own kind, everything else was rolled back with them. */
    private void classifyAborted(List<OutboxRecord> batch, List<Integer> sendable, SendResult[] results,
            BatchAttempt attempt, RuntimeException thrown) {
        if (!attempt.anyCulprit()) {
            Throwable cause = thrown != null ? thrown : attempt.anyError();
            log.warn("txoutbox-kafka: lane {}: transaction of {} records aborted ({}); they will be retried", lane,
                    sendable.size(), cause);
            fill(results, sendable, SendResult.unavailable(batchFailure("the batch's transaction was aborted",
                    cause)));
            return;
        }
        List<String> culprits = new ArrayList<>();
        for (int k = 0; k < sendable.size(); k++) {
            if (attempt.isCulprit(k)) {
                OutboxRecord r = batch.get(sendable.get(k));
                Throwable error = confirmMissingTopic(r, attempt.error(k));
                SendResult.Kind kind = Failures.kindOf(error);
                results[sendable.get(k)] = new SendResult.Failed(kind, error);
                culprits.add(r.eventId().toString());
                log.warn("txoutbox-kafka: lane {}: event {} (outbox id {}) failed ({}): {}", lane, r.eventId(), r.id(),
                        kind, error.toString());
            }
        }
        OutboxException collateral = new OutboxException("rolled back with its batch's transaction because event(s) "
                + culprits + " failed; resend it", null, true);
        for (int k = 0; k < sendable.size(); k++) {
            if (!attempt.isCulprit(k)) {
                results[sendable.get(k)] = SendResult.collateral(collateral);
            }
        }
    }

    private Throwable confirmMissingTopic(OutboxRecord record, Throwable error) {
        if (!Failures.isMissingMetadata(error) || !topicProbe.confirmedMissing(record.topic())) {
            return error;
        }
        return new Failures.MissingTopicException("event " + record.eventId() + ": topic '" + record.topic()
                + "' does not exist; create it (auto-creation is off or not allowed) or fix the event's topic", error);
    }

    /**
     * The producer's state is unknown or dead (fenced, commit timed out, fatal error): drop it and retry the batch.
     * A new producer's initTransactions completes or aborts whatever this one left open before it sends anything.
     */
    private void giveUp(List<OutboxRecord> batch, List<Integer> sendable, SendResult[] results, Throwable error,
            BatchAttempt attempt) {
        discardProducer();
        Throwable cause;
        if (Failures.isFenced(error) || attempt.anyFenced()) {
            cause = new OutboxException("lane " + lane + ": producer with transactional.id '"
                    + config.transactionalId(lane) + "' was fenced by a newer producer of the same lane (another "
                    + "relay instance took the lane over); nothing of this batch was committed", error, true);
            log.warn("txoutbox-kafka: lane {}: producer fenced; {} records not sent (first event {})", lane,
                    sendable.size(), batch.get(sendable.get(0)).eventId());
        } else {
            cause = batchFailure("the batch's transaction did not complete", error);
            log.warn("txoutbox-kafka: lane {}: transaction of {} records failed ({}); producer replaced, batch "
                    + "will be retried (first event {})", lane, sendable.size(), String.valueOf(error),
                    batch.get(sendable.get(0)).eventId());
        }
        // the broker or the lane's ownership is the problem, not the records: the relay backs off, counts nothing
        fill(results, sendable, SendResult.unavailable(cause));
    }

    private Producer<byte[], byte[]> producer() {
        Producer<byte[], byte[]> p = producer;
        if (p != null) {
            return p;
        }
        if (closed) {
            throw new IllegalStateException("KafkaTransport is closed");
        }
        p = producerFactory.apply(config.producerProperties(lane));
        try {
            p.initTransactions();
        } catch (RuntimeException e) {
            closeQuietly(p, Duration.ZERO);
            throw e;
        }
        log.info("txoutbox-kafka: lane {}: transactional producer '{}' ready", lane, config.transactionalId(lane));
        producer = p;
        return p;
    }

    private void discardProducer() {
        Producer<byte[], byte[]> p = producer;
        producer = null;
        if (p != null) {
            closeQuietly(p, Duration.ZERO);
        }
    }

    /** Called by the transport's close, from another thread, after the lane thread stopped or was interrupted. */
    void closeProducer(Duration timeout) {
        closed = true;
        Producer<byte[], byte[]> p = producer;
        producer = null;
        if (p != null) {
            closeQuietly(p, timeout);
        }
    }

    private void closeQuietly(Producer<byte[], byte[]> p, Duration timeout) {
        try {
            p.close(timeout);
        } catch (RuntimeException e) {
            log.debug("txoutbox-kafka: lane {}: closing the producer failed: {}", lane, e.toString());
        }
    }

    @Override
    public String toString() {
        return lane;
    }

    private OutboxException batchFailure(String what, Throwable cause) {
        return new OutboxException("lane " + lane + ": " + what + ": " + cause, cause, true);
    }

    private static void fill(SendResult[] results, List<Integer> indexes, SendResult result) {
        for (int i : indexes) {
            results[i] = result;
        }
    }
}
