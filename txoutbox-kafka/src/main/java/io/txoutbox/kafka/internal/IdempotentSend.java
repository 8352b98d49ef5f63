package io.txoutbox.kafka.internal;

import io.txoutbox.OutboxException;
import io.txoutbox.spi.OutboxRecord;
import io.txoutbox.spi.PartitionUnavailableException;
import io.txoutbox.spi.SendResult;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.utils.Utils;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Mode.IDEMPOTENT. Order holds because every key's records in the batch form one run in one partition, and each
 * partition's records form one record batch: the producer holds them (linger.ms is long) until the flush, they
 * fit in batch.size, and the batch touches no more partitions than buffer.memory holds record batches for (see
 * {@link PartitionBudget}: out of memory, the producer would send partial batches). The broker appends a record
 * batch whole or not at all, so within a key either all
 * records of the run arrive, or none, or (after a timeout) possibly all of them later, as duplicates. Records
 * that would break the rule — a key that changes topic within the batch, a partition's share over
 * {@link ProducerSettings#partitionShareBytes()}, a partition beyond the budget — are deferred
 * ({@code COLLATERAL}) with the rest of their key
 * to the next batch, which the relay sends only after this one's outcome is known.
 */
final class IdempotentSend implements LaneProducer.Send {

    /** The lane producer's category, so that every line of a lane stays under one logger. */
    private static final Logger log = LoggerFactory.getLogger(LaneProducer.class);

    private final LaneProducer owner;
    private final String lane;
    private final ProducerSettings settings;
    private final TopicProbe topicProbe;
    private final PartitionQuarantine quarantine;

    IdempotentSend(LaneProducer owner, String lane, ProducerSettings settings, TopicProbe topicProbe,
            PartitionQuarantine quarantine) {
        this.owner = owner;
        this.lane = lane;
        this.settings = settings;
        this.topicProbe = topicProbe;
        this.quarantine = quarantine;
    }

    @Override
    public void send(List<OutboxRecord> batch, List<Integer> sendable,
            List<ProducerRecord<byte[], byte[]>> records, SendResult[] results) {
        Producer<byte[], byte[]> p = owner.startedProducer(sendable, results, "could not start the producer");
        if (p == null) {
            return;
        }
        Map<String, Integer> partitionCounts = new HashMap<>();
        Map<String, Long> shares = new HashMap<>();
        Map<String, Throwable> topicFailures = new HashMap<>();
        Map<String, String> keyTopic = new HashMap<>();
        Map<String, UUID> heldKeys = new HashMap<>();
        Map<String, Long> partitionBytes = new HashMap<>();
        java.util.Set<String> fullPartitions = new java.util.HashSet<>();
        PartitionBudget budget = PartitionBudget.of(settings);
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
                    shares.put(r.topic(), Math.min(settings.partitionShareBytes(),
                            topicProbe.maxMessageBytes(r.topic()) * 9L / 10));
                } catch (RuntimeException e) {
                    topicFailures.put(r.topic(), owner.confirmMissingTopic(r, e));
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
                int other = key == null ? owner.healthyPartition(r.topic(), partition, partitions) : -1;
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
            owner.discardProducer();
        }
        for (int k = 0; k < out.size(); k++) {
            int i = toSend.get(k);
            RecordMetadata md = attempt.metadata(k);
            Exception error = attempt.error(k);
            if (md != null && error == null) {
                results[i] = new SendResult.Delivered(md.partition(), md.offset());
            } else if (error != null) {
                Throwable cause = owner.confirmMissingTopic(batch.get(i), error);
                int partition = out.get(k).partition();
                if (LaneProducer.isPartitionScoped(cause) && LaneProducer.ackedElsewhere(batch, toSend, attempt, out.get(k).topic(), partition)) {
                    cause = quarantine.add(out.get(k).topic(), partition, cause);
                }
                results[i] = new SendResult.Failed(cause instanceof PartitionUnavailableException
                        ? SendResult.Kind.UNAVAILABLE : Failures.kindOf(cause), cause);
                if (Failures.unwrap(error) instanceof org.apache.kafka.common.errors.RecordTooLargeException) {
                    topicProbe.forgetLimit(batch.get(i).topic());
                }
                if (Failures.isFatal(error)) {
                    owner.discardProducer();
                }
            } else {
                results[i] = SendResult.unavailable(owner.batchFailure("no acknowledgement before the producer was "
                        + "replaced", thrown != null ? thrown : new IllegalStateException("no callback")));
            }
        }
    }

    private static void hold(Map<String, UUID> heldKeys, String key, OutboxRecord r) {
        if (key != null) {
            heldKeys.putIfAbsent(key, r.eventId());
        }
    }
}
