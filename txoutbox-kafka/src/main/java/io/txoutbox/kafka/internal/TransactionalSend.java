package io.txoutbox.kafka.internal;

import io.txoutbox.OutboxException;
import io.txoutbox.spi.OutboxRecord;
import io.txoutbox.spi.SendResult;
import io.txoutbox.spi.SenderFencedException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.errors.InterruptException;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.utils.Utils;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Mode.TRANSACTIONAL: a lane's batch as one Kafka transaction. If anything fails inside the transaction it is
 * aborted: nothing of the batch becomes visible to {@code read_committed} consumers, the failing record is classified
 * and every other record is reported {@code COLLATERAL}. A partition that fails while others took records is
 * quarantined, and the lane moves to its other transactional id ({@link TransactionalIds}). Runs on the lane's thread
 * only; the producer and the shared state are its {@link LaneProducer}'s.
 */
final class TransactionalSend implements LaneProducer.Send {

    /** The lane producer's category, so that every line of a lane stays under one logger. */
    private static final Logger log = LoggerFactory.getLogger(LaneProducer.class);

    private final LaneProducer owner;
    private final String lane;
    private final String transactionalId;
    private final PartitionQuarantine quarantine;
    private final TransactionalIds transactionalIds;
    private final boolean customPartitioner;

    TransactionalSend(LaneProducer owner, String lane, String transactionalId, PartitionQuarantine quarantine,
            TransactionalIds transactionalIds, boolean customPartitioner) {
        this.owner = owner;
        this.lane = lane;
        this.transactionalId = transactionalId;
        this.quarantine = quarantine;
        this.transactionalIds = transactionalIds;
        this.customPartitioner = customPartitioner;
    }

    @Override
    public void send(List<OutboxRecord> batch, List<Integer> sendable,
            List<ProducerRecord<byte[], byte[]>> records, SendResult[] results) {
        Producer<byte[], byte[]> p = owner.startedProducer(sendable, results, "could not start the transactional producer");
        if (p == null) {
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
            owner.discardProducer();
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
            if (attempt.isCulprit(k) && LaneProducer.isPartitionScoped(error) && partition >= 0) {
                OutboxRecord r = batch.get(sendable.get(k));
                if (LaneProducer.ackedElsewhere(batch, sendable, attempt, r.topic(), partition)) {
                    quarantine.add(r.topic(), partition, error);
                    any = true;
                }
            }
        }
        return any;
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
                                ? owner.healthyPartition(r.topic(), partition, n) : -1;
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

    /** After a successful abort: the culprits get their own kind, everything else was rolled back with them. */
    private void classifyAborted(List<OutboxRecord> batch, List<Integer> sendable, SendResult[] results,
            BatchAttempt attempt, RuntimeException thrown) {
        if (!attempt.anyCulprit()) {
            Throwable cause = thrown != null ? thrown : attempt.anyError();
            log.warn("txoutbox-kafka: lane {}: transaction of {} records aborted ({}); they will be retried", lane,
                    sendable.size(), cause);
            LaneProducer.fill(results, sendable, SendResult.unavailable(owner.batchFailure("the batch's transaction was aborted",
                    cause)));
            return;
        }
        List<String> culprits = new ArrayList<>();
        for (int k = 0; k < sendable.size(); k++) {
            if (attempt.isCulprit(k)) {
                OutboxRecord r = batch.get(sendable.get(k));
                Throwable error = owner.confirmMissingTopic(r, attempt.error(k));
                SendResult.Kind kind = Failures.kindOf(error);
                int partition = attempt.partition(k);
                if (LaneProducer.isPartitionScoped(error) && partition >= 0 && quarantine.contains(r.topic(), partition)) {
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

    /**
     * The producer's state is unknown or dead (fenced, commit timed out, fatal error): drop it and retry the batch.
     * A new producer's initTransactions completes or aborts whatever this one left open before it sends anything.
     */
    private void giveUp(List<OutboxRecord> batch, List<Integer> sendable, SendResult[] results, Throwable error,
            BatchAttempt attempt) {
        owner.discardProducer();
        Throwable cause;
        if (Failures.isFenced(error) || attempt.anyFenced()) {
            cause = new SenderFencedException("lane " + lane + ": producer with transactional.id '"
                    + transactionalId + "' was fenced by a newer producer with the same transactional.id (another "
                    + "relay instance took the lane over, or another outbox uses the same id); nothing of this batch "
                    + "was committed", transactionalId, error);
            log.warn("txoutbox-kafka: lane {}: producer fenced; {} records not sent (first event {})", lane,
                    sendable.size(), batch.get(sendable.get(0)).eventId());
        } else {
            cause = owner.batchFailure("the batch's transaction did not complete", error);
            log.warn("txoutbox-kafka: lane {}: transaction of {} records failed ({}); producer replaced, batch "
                    + "will be retried (first event {})", lane, sendable.size(), String.valueOf(error),
                    batch.get(sendable.get(0)).eventId());
        }
        // the broker or the lane's ownership is the problem, not the records: the relay backs off, counts nothing
        LaneProducer.fill(results, sendable, SendResult.unavailable(cause));
    }
}
