package io.txoutbox.kafka;

import io.txoutbox.OutboxException;
import io.txoutbox.spi.OutboxRecord;
import io.txoutbox.spi.PartitionUnavailableException;
import io.txoutbox.spi.SendResult;
import io.txoutbox.spi.SenderFencedException;
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
import org.apache.kafka.common.utils.Utils;
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
    private final String transactionalId;
    private final KafkaTransportConfig config;
    /** The transport's connection failures explained, one streak for all its lanes. */
    private final ConnectionTrouble connectionTrouble;
    private final RecordMapper mapper;
    private final TopicProbe topicProbe;
    private final Function<Map<String, Object>, Producer<byte[], byte[]>> producerFactory;
    private volatile Producer<byte[], byte[]> producer;
    private volatile boolean closed;
    private final PartitionQuarantine quarantine;
    private final boolean customPartitioner;
    private final TransactionalIds transactionalIds;

    Lane(String lane, KafkaTransportConfig config, RecordMapper mapper, TopicProbe topicProbe,
            Function<Map<String, Object>, Producer<byte[], byte[]>> producerFactory) {
        this(lane, config.transactionalId(lane), config, new ConnectionTrouble("txoutbox-kafka",
                config.producerProperties()), mapper, topicProbe, producerFactory);
    }

    /** {@code transactionalId}: the lane's, from its outbox's installation id or the explicit prefix. */
    Lane(String lane, String transactionalId, KafkaTransportConfig config, ConnectionTrouble connectionTrouble,
            RecordMapper mapper, TopicProbe topicProbe,
            Function<Map<String, Object>, Producer<byte[], byte[]>> producerFactory) {
        this.lane = lane;
        this.connectionTrouble = connectionTrouble;
        this.transactionalId = transactionalId;
        this.config = config;
        this.mapper = mapper;
        this.topicProbe = topicProbe;
        this.producerFactory = producerFactory;
        this.quarantine = new PartitionQuarantine(lane, config.adminProperties(), config.requestTimeoutMs());
        this.customPartitioner = config.producerProperties(lane)
                .containsKey(org.apache.kafka.clients.producer.ProducerConfig.PARTITIONER_CLASS_CONFIG);
        this.transactionalIds = new TransactionalIds(lane, transactionalId, config, producerFactory);
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
                if (config.mode() == KafkaTransport.Mode.IDEMPOTENT) {
                    sendIdempotent(batch, sendable, records, results);
                } else {
                    sendInTransaction(batch, sendable, records, results);
                }
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

    private void sendInTransaction(List<OutboxRecord> batch, List<Integer> sendable,
            List<ProducerRecord<byte[], byte[]>> records, SendResult[] results) {
        Producer<byte[], byte[]> p;
        try {
            p = producer();
        } catch (RuntimeException e) {
            connectionTrouble.noProducer(lane, e, sendable.size());
            fill(results, sendable,
                    SendResult.unavailable(batchFailure("could not start the transactional producer", e)));
            return;
        }
        if (quarantine.isEmpty()) {
            transactionalIds.fenceHealed();
        } else {
            divertQuarantined(batch, sendable, records, results, p);
            if (sendable.isEmpty()) {
                return;
            }
        }
        BatchAttempt attempt = new BatchAttempt(records.size());
        RuntimeException thrown = null;
        try {
            p.beginTransaction();
            for (int k = 0; k < records.size() && !attempt.failed(); k++) {
                p.send(records.get(k), attempt.callback(k));
            }
            // every record's outcome before the commit: a partition that fails after the others were acknowledged
            // is then named (and quarantined) instead of timing the commit out
            p.flush();
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
        // a partition that failed while others took records: the transaction's abort markers cannot be written to
        // it until it heals, so this transactional.id is blocked until then and the lane moves to its other one
        boolean blocked = quarantineFailedPartitions(batch, sendable, attempt);
        try {
            p.abortTransaction();
        } catch (RuntimeException e) {
            if (!blocked) {
                giveUp(batch, sendable, results, e, attempt);
                return;
            }
        }
        if (blocked) {
            transactionalIds.blocked();
            discardProducer();
        }
        classifyAborted(batch, sendable, results, attempt, thrown);
    }

    /** Quarantines the partitions that failed retriably while others of the attempt were acknowledged. */
    private boolean quarantineFailedPartitions(List<OutboxRecord> batch, List<Integer> sendable,
            BatchAttempt attempt) {
        boolean any = false;
        for (int k = 0; k < sendable.size(); k++) {
            Exception error = attempt.error(k);
            int partition = attempt.partition(k);
            if (attempt.isCulprit(k) && isPartitionScoped(error) && partition >= 0) {
                OutboxRecord r = batch.get(sendable.get(k));
                if (ackedElsewhere(batch, sendable, attempt, r.topic(), partition)) {
                    quarantine.add(r.topic(), partition, error);
                    any = true;
                }
            }
        }
        return any;
    }

    /**
     * Mode.IDEMPOTENT. Order holds because every key's records in the batch form one run in one partition, and each
     * partition's records form one record batch: the producer holds them (linger.ms is long) until the flush, they
     * fit in batch.size, and the batch touches no more partitions than buffer.memory holds record batches for (see
     * {@link PartitionBudget}: out of memory, the producer would send partial batches). The broker appends a record
     * batch whole or not at all, so within a key either all
     * records of the run arrive, or none, or (after a timeout) possibly all of them later, as duplicates. Records
     * that would break the rule — a key that changes topic within the batch, a partition's share over
     * {@link KafkaTransportConfig#partitionShareBytes()}, a partition beyond the budget — are deferred
     * ({@code COLLATERAL}) with the rest of their key
     * to the next batch, which the relay sends only after this one's outcome is known.
     */
    private void sendIdempotent(List<OutboxRecord> batch, List<Integer> sendable,
            List<ProducerRecord<byte[], byte[]>> records, SendResult[] results) {
        Producer<byte[], byte[]> p;
        try {
            p = producer();
        } catch (RuntimeException e) {
            connectionTrouble.noProducer(lane, e, sendable.size());
            fill(results, sendable, SendResult.unavailable(batchFailure("could not start the producer", e)));
            return;
        }
        Map<String, Integer> partitionCounts = new HashMap<>();
        Map<String, Long> shares = new HashMap<>();
        Map<String, Throwable> topicFailures = new HashMap<>();
        Map<String, String> keyTopic = new HashMap<>();
        Map<String, UUID> heldKeys = new HashMap<>();
        Map<String, Long> partitionBytes = new HashMap<>();
        java.util.Set<String> fullPartitions = new java.util.HashSet<>();
        PartitionBudget budget = PartitionBudget.of(config);
        List<Integer> toSend = new ArrayList<>(sendable.size());
        List<ProducerRecord<byte[], byte[]>> out = new ArrayList<>(sendable.size());
        for (int k = 0; k < sendable.size(); k++) {
            int i = sendable.get(k);
            OutboxRecord r = batch.get(i);
            ProducerRecord<byte[], byte[]> pr = records.get(k);
            String key = r.key();
            UUID heldBy = key == null ? null : heldKeys.get(key);
            if (heldBy != null) {
                results[i] = SendResult.collateral(new OutboxException("event " + r.eventId() + " not sent in this "
                        + "batch: the earlier event " + heldBy + " of its key waits for the next one"));
                continue;
            }
            Integer partitions = partitionCounts.get(r.topic());
            if (partitions == null && !topicFailures.containsKey(r.topic())) {
                try {
                    partitions = p.partitionsFor(r.topic()).size();
                    partitionCounts.put(r.topic(), partitions);
                    // below the topic's own limit, so the broker never makes the producer split a record batch
                    shares.put(r.topic(), Math.min(config.partitionShareBytes(),
                            topicProbe.maxMessageBytes(r.topic()) * 9L / 10));
                } catch (RuntimeException e) {
                    topicFailures.put(r.topic(), confirmMissingTopic(r, e));
                }
            }
            Throwable topicFailure = topicFailures.get(r.topic());
            if (topicFailure != null) {
                results[i] = new SendResult.Failed(Failures.kindOf(topicFailure), topicFailure);
                hold(heldKeys, key, r);
                continue;
            }
            int partition = key == null ? Math.floorMod(r.eventId().hashCode(), partitions)
                    : Utils.toPositive(Utils.murmur2(pr.key())) % partitions;
            if (!quarantine.isEmpty() && quarantine.contains(r.topic(), partition)) {
                int other = key == null ? healthyPartition(r.topic(), partition, partitions) : -1;
                if (other < 0) {
                    results[i] = SendResult.unavailable(quarantine.causeFor(r.topic(), partition));
                    hold(heldKeys, key, r);
                    continue;
                }
                partition = other; // a keyless record has no order to keep: it goes to a healthy partition
            }
            String firstTopic = key == null ? null : keyTopic.putIfAbsent(key, r.topic());
            String tp = r.topic() + "-" + partition;
            long size = RecordMapper.serializedSizeUpperBound(pr.key(), pr.value(), pr.headers().toArray());
            long used = partitionBytes.getOrDefault(tp, 0L);
            long share = shares.get(r.topic()); // a record above it goes alone
            boolean otherTopic = firstTopic != null && !firstTopic.equals(r.topic());
            if (otherTopic || fullPartitions.contains(tp) || (used > 0 && used + size > share)) {
                if (!otherTopic) {
                    fullPartitions.add(tp); // keeps the partition's records in order: none after a deferred one
                }
                results[i] = SendResult.collateral(new OutboxException("event " + r.eventId() + " deferred to the "
                        + "next batch: " + (otherTopic ? "its key already has events on topic " + firstTopic
                                + " in this batch" : "partition " + tp + " has its share of this batch")));
                hold(heldKeys, key, r);
                continue;
            }
            if (!budget.admits(tp, size)) {
                results[i] = SendResult.collateral(new OutboxException("event " + r.eventId() + " deferred to the "
                        + "next batch: partition " + tp + " is one more than buffer.memory holds record batches for ("
                        + budget.partitions() + " partitions in this batch)"));
                hold(heldKeys, key, r);
                continue;
            }
            partitionBytes.put(tp, used + size);
            toSend.add(i);
            out.add(new ProducerRecord<>(pr.topic(), partition, null, pr.key(), pr.value(), pr.headers()));
        }
        if (toSend.isEmpty()) {
            return;
        }
        BatchAttempt attempt = new BatchAttempt(out.size());
        RuntimeException thrown = null;
        int handed = 0;
        try {
            for (; handed < out.size(); handed++) {
                p.send(out.get(handed), attempt.callback(handed));
            }
            p.flush(); // returns when every record handed over has completed (callbacks ran)
        } catch (RuntimeException e) {
            thrown = e;
        }
        if (thrown != null) {
            // the producer refused a record, or the flush was interrupted: the state of what it holds is unknown,
            // so it goes, and everything not known to be acknowledged is sent again (duplicates, never a reorder)
            log.warn("txoutbox-kafka: lane {}: idempotent send of {} records interrupted ({}); producer replaced",
                    lane, out.size(), thrown.toString());
            discardProducer();
        }
        for (int k = 0; k < out.size(); k++) {
            int i = toSend.get(k);
            RecordMetadata md = attempt.metadata(k);
            Exception error = attempt.error(k);
            if (md != null && error == null) {
                results[i] = new SendResult.Delivered(md.partition(), md.offset());
            } else if (error != null) {
                Throwable cause = confirmMissingTopic(batch.get(i), error);
                int partition = out.get(k).partition();
                if (isPartitionScoped(cause) && ackedElsewhere(batch, toSend, attempt, out.get(k).topic(), partition)) {
                    cause = quarantine.add(out.get(k).topic(), partition, cause);
                }
                results[i] = new SendResult.Failed(cause instanceof PartitionUnavailableException
                        ? SendResult.Kind.UNAVAILABLE : Failures.kindOf(cause), cause);
                if (Failures.unwrap(error) instanceof org.apache.kafka.common.errors.RecordTooLargeException) {
                    topicProbe.forgetLimit(batch.get(i).topic());
                }
                if (Failures.isFatal(error)) {
                    discardProducer();
                }
            } else {
                results[i] = SendResult.unavailable(batchFailure("no acknowledgement before the producer was "
                        + "replaced", thrown != null ? thrown : new IllegalStateException("no callback")));
            }
        }
    }

    /**
     * Mode.TRANSACTIONAL with quarantined partitions: the records bound for them are answered at once
     * ({@code UNAVAILABLE}, the later records of their keys {@code COLLATERAL}) and taken out of the batch; a keyless
     * record of such a topic goes to a healthy partition. With a custom partitioner the lane cannot tell where a
     * record goes, so it sends it as usual.
     */
    private void divertQuarantined(List<OutboxRecord> batch, List<Integer> sendable,
            List<ProducerRecord<byte[], byte[]>> records, SendResult[] results, Producer<byte[], byte[]> p) {
        if (customPartitioner) {
            return;
        }
        Map<String, UUID> stopped = new HashMap<>();
        Map<String, Integer> partitionCounts = new HashMap<>();
        for (int k = 0; k < sendable.size();) {
            int i = sendable.get(k);
            OutboxRecord r = batch.get(i);
            ProducerRecord<byte[], byte[]> pr = records.get(k);
            UUID blocker = r.key() == null ? null : stopped.get(r.key());
            SendResult diverted = null;
            if (blocker != null) {
                diverted = SendResult.collateral(new OutboxException("event " + r.eventId() + " not sent: the "
                        + "earlier event " + blocker + " of its key waits for its partition"));
            } else if (quarantine.hasTopic(r.topic())) {
                int n = partitionCounts.computeIfAbsent(r.topic(), t -> partitionCount(p, t));
                if (n > 0) {
                    int partition = pr.partition() != null ? pr.partition()
                            : pr.key() != null ? Utils.toPositive(Utils.murmur2(pr.key())) % n
                            : Math.floorMod(r.eventId().hashCode(), n);
                    if (quarantine.contains(r.topic(), partition)) {
                        int other = pr.key() == null && pr.partition() == null
                                ? healthyPartition(r.topic(), partition, n) : -1;
                        if (other >= 0) {
                            records.set(k, new ProducerRecord<>(pr.topic(), other, pr.timestamp(), pr.key(),
                                    pr.value(), pr.headers()));
                        } else {
                            diverted = SendResult.unavailable(quarantine.causeFor(r.topic(), partition));
                            if (r.key() != null) {
                                stopped.put(r.key(), r.eventId());
                            }
                        }
                    }
                }
            }
            if (diverted == null) {
                k++;
            } else {
                results[i] = diverted;
                sendable.remove(k);
                records.remove(k);
            }
        }
    }

    private int partitionCount(Producer<byte[], byte[]> p, String topic) {
        try {
            return p.partitionsFor(topic).size();
        } catch (RuntimeException e) {
            return -1; // the send itself will report it
        }
    }

    /** A partition of the topic that is not quarantined, starting after {@code from}; -1 when all are. */
    private int healthyPartition(String topic, int from, int partitions) {
        for (int d = 1; d < partitions; d++) {
            int candidate = (from + d) % partitions;
            if (!quarantine.contains(topic, candidate)) {
                return candidate;
            }
        }
        return -1;
    }

    /** A retriable failure of one partition (no leader, too few in-sync replicas, expired), not of the producer. */
    private static boolean isPartitionScoped(Throwable error) {
        return Failures.kindOf(error) == SendResult.Kind.UNAVAILABLE && !Failures.isFenced(error)
                && !Failures.isMissingMetadata(error);
    }

    /** True when the broker acknowledged a record of this attempt on another partition than {@code topic-partition}. */
    private static boolean ackedElsewhere(List<OutboxRecord> batch, List<Integer> indexes, BatchAttempt attempt,
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

    private static void hold(Map<String, UUID> heldKeys, String key, OutboxRecord r) {
        if (key != null) {
            heldKeys.putIfAbsent(key, r.eventId());
        }
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
                int partition = attempt.partition(k);
                if (isPartitionScoped(error) && partition >= 0 && quarantine.contains(r.topic(), partition)) {
                    error = quarantine.causeFor(r.topic(), partition);
                }
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
            cause = new SenderFencedException("lane " + lane + ": producer with transactional.id '"
                    + transactionalId + "' was fenced by a newer producer with the same transactional.id (another "
                    + "relay instance took the lane over, or another outbox uses the same id); nothing of this batch "
                    + "was committed", transactionalId, error);
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

    /** Makes the producer ahead of the first batch (see KafkaTransport#prepare); a failure waits for that batch. */
    void prepare() {
        try {
            producer();
        } catch (RuntimeException e) {
            log.info("txoutbox-kafka: lane {}: producer not ready yet ({}); the first batch tries again", lane,
                    e.toString());
        }
    }

    private Producer<byte[], byte[]> producer() {
        Producer<byte[], byte[]> p = producer;
        if (p != null) {
            return p;
        }
        if (closed) {
            throw new IllegalStateException("KafkaTransport is closed");
        }
        p = producerFactory.apply(config.mode() == KafkaTransport.Mode.IDEMPOTENT
                ? config.producerProperties(lane, transactionalId) : transactionalIds.producerProperties());
        if (config.mode() == KafkaTransport.Mode.IDEMPOTENT) {
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

    private OutboxException batchFailure(String what, Throwable cause) {
        return new OutboxException("lane " + lane + ": " + what + ": " + cause, cause, true);
    }

    private static void fill(SendResult[] results, List<Integer> indexes, SendResult result) {
        for (int i : indexes) {
            results[i] = result;
        }
    }
}
