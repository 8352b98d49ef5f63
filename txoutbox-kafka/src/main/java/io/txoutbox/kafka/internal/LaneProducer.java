package io.txoutbox.kafka.internal;

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
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One relay lane's producer (not the relay's lane: the transport's side of it): the producer's life, and each batch's
 * common part. Only the lane's own thread ({@link LaneWorker}) calls {@link #sendBatch}; the producer is created
 * there on first use and replaced after fencing or a fatal error.
 *
 * <p>Records that cannot be sent are failed before anything is handed to the producer (and the later records of
 * their key with them), so they cannot abort a transaction; the rest go by the transport's mode, one Kafka
 * transaction per batch ({@link TransactionalSend}) or one record batch per partition ({@link IdempotentSend}).
 */
final class LaneProducer {

    /** How the sendable records of a batch go out; fills {@code results} at the indexes in {@code sendable}. */
    interface Send {
        void send(List<OutboxRecord> batch, List<Integer> sendable, List<ProducerRecord<byte[], byte[]>> records,
                SendResult[] results);
    }

    private static final Logger log = LoggerFactory.getLogger(LaneProducer.class);

    private final String lane;
    private final String transactionalId;
    private final ProducerSettings settings;
    /** The transport's connection failures explained, one streak for all its lanes. */
    private final ConnectionTrouble connectionTrouble;
    private final RecordMapper mapper;
    private final TopicProbe topicProbe;
    private final Function<Map<String, Object>, Producer<byte[], byte[]>> producerFactory;
    private volatile Producer<byte[], byte[]> producer;
    private volatile boolean closed;
    private final PartitionQuarantine quarantine;
    private final TransactionalIds transactionalIds;
    private final Send send;

    /** {@code transactionalId}: the lane's, from its outbox's installation id or the explicit prefix. */
    LaneProducer(String lane, String transactionalId, ProducerSettings settings, ConnectionTrouble connectionTrouble,
            RecordMapper mapper, TopicProbe topicProbe,
            Function<Map<String, Object>, Producer<byte[], byte[]>> producerFactory) {
        this.lane = lane;
        this.connectionTrouble = connectionTrouble;
        this.transactionalId = transactionalId;
        this.settings = settings;
        this.mapper = mapper;
        this.topicProbe = topicProbe;
        this.producerFactory = producerFactory;
        this.quarantine = new PartitionQuarantine(lane, settings.adminProperties(), settings.requestTimeoutMs());
        boolean customPartitioner = settings.producerProperties(lane)
                .containsKey(org.apache.kafka.clients.producer.ProducerConfig.PARTITIONER_CLASS_CONFIG);
        this.transactionalIds = new TransactionalIds(lane, transactionalId, settings, producerFactory);
        this.send = settings.idempotent() ? new IdempotentSend(this, lane, settings, topicProbe, quarantine)
                : new TransactionalSend(this, lane, transactionalId, quarantine, transactionalIds, customPartitioner);
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
                send.send(batch, sendable, records, results);
            } catch (Throwable t) {
                // a bug or an Error: the transaction's state is unknown, so the producer goes and the batch is retried
                log.error("txoutbox-kafka: lane {}: unexpected failure sending a batch of {} records", lane,
                        sendable.size(), t);
                discardProducer();
                fill(results, sendable, SendResult.retriable(t));
            }
        }
        return connectionTrouble.review(lane, Arrays.asList(results));
    }

    /**
     * The lane's producer, made now if need be; null when it cannot be made, with every sendable record answered
     * {@code UNAVAILABLE} ({@code what} says which producer) and the connection trouble reported.
     */
    Producer<byte[], byte[]> startedProducer(List<Integer> sendable, SendResult[] results, String what) {
        try {
            return producer();
        } catch (RuntimeException e) {
            connectionTrouble.noProducer(lane, e, sendable.size());
            fill(results, sendable, SendResult.unavailable(batchFailure(what, e)));
            return null;
        }
    }

    /** A partition of the topic that is not quarantined, starting after {@code from}; -1 when all are. */
    int healthyPartition(String topic, int from, int partitions) {
        for (int d = 1; d < partitions; d++) {
            int candidate = (from + d) % partitions;
            if (!quarantine.contains(topic, candidate)) {
                return candidate;
            }
        }
        return -1;
    }

    /** A retriable failure of one partition (no leader, too few in-sync replicas, expired), not of the producer. */
    static boolean isPartitionScoped(Throwable error) {
        return Failures.kindOf(error) == SendResult.Kind.UNAVAILABLE && !Failures.isFenced(error)
                && !Failures.isMissingMetadata(error);
    }

    /** True when the broker acknowledged a record of this attempt on another partition than {@code topic-partition}. */
    static boolean ackedElsewhere(List<OutboxRecord> batch, List<Integer> indexes, BatchAttempt attempt,
            String topic, int partition) {
        for (int k = 0; k < indexes.size(); k++) {
            RecordMetadata md = attempt.metadata(k);
            if (md != null && attempt.error(k) == null
                    && (md.partition() != partition || !batch.get(indexes.get(k)).topic().equals(topic))) {
                return true;
            }
        }
        return false;
    }

    Throwable confirmMissingTopic(OutboxRecord record, Throwable error) {
        if (!Failures.isMissingMetadata(error) || !topicProbe.confirmedMissing(record.topic())) {
            return error;
        }
        return new Failures.MissingTopicException("event " + record.eventId() + ": topic '" + record.topic()
                + "' does not exist; create it (auto-creation is off or not allowed) or fix the event's topic", error);
    }

    /**
     * The relay took the lane: makes the producer ahead of the first batch (see KafkaTransport#prepare); a failure
     * waits for that batch. In {@code TRANSACTIONAL} mode a producer kept from an earlier ownership of the lane goes
     * first: another instance may have owned the lane meanwhile, and its {@code initTransactions} fenced that
     * producer, whose first send would then fail and make the new producer only after that failed batch.
     */
    void prepare() {
        if (!settings.idempotent() && producer != null) {
            log.debug("txoutbox-kafka: lane {}: taken again; its producer is made anew", lane);
            discardProducer();
        }
        try {
            producer();
        } catch (RuntimeException e) {
            if (connectionTrouble.explained()) { // said once already, in words
                log.debug("txoutbox-kafka: lane {}: producer not ready yet ({})", lane, e.toString());
            } else {
                log.info("txoutbox-kafka: lane {}: producer not ready yet ({}); the first batch tries again", lane,
                        e.toString());
            }
        }
    }

    Producer<byte[], byte[]> producer() {
        Producer<byte[], byte[]> p = producer;
        if (p != null) {
            return p;
        }
        if (closed) {
            throw new IllegalStateException("KafkaTransport is closed");
        }
        String refusal = connectionTrouble.beforeClient();
        if (refusal != null) { // a plaintext producer at a TLS listener: each connection attempt allocates ~336 MB
            connectionTrouble.report(refusal, "the lanes of this transport make no producer, keep their events "
                    + "pending and retry with the relay's outage backoff");
            throw new OutboxException(refusal, null, true);
        }
        p = producerFactory.apply(settings.idempotent()
                ? settings.producerProperties(lane, transactionalId) : transactionalIds.producerProperties());
        if (settings.idempotent()) {
            log.info("txoutbox-kafka: lane {}: idempotent producer ready", lane);
            producer = p;
            return p;
        }
        try {
            p.initTransactions();
        } catch (RuntimeException e) {
            closeQuietly(p, Duration.ZERO);
            throw e;
        }
        log.info("txoutbox-kafka: lane {}: transactional producer '{}' ready", lane, transactionalIds.current());
        transactionalIds.fenceOther();
        producer = p;
        return p;
    }

    void discardProducer() {
        Producer<byte[], byte[]> p = producer;
        producer = null;
        if (p != null) {
            closeQuietly(p, Duration.ZERO);
        }
    }

    /** Called by the transport's close, from another thread, after the lane thread stopped or was interrupted. */
    void closeProducer(Duration timeout) {
        closed = true;
        quarantine.close();
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

    OutboxException batchFailure(String what, Throwable cause) {
        return new OutboxException("lane " + lane + ": " + what + ": " + cause, cause, true);
    }

    static void fill(SendResult[] results, List<Integer> indexes, SendResult result) {
        for (int i : indexes) {
            results[i] = result;
        }
    }
}
