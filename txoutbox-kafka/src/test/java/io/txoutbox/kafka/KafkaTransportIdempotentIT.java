package io.txoutbox.kafka;

import static org.assertj.core.api.Assertions.assertThat;

import io.txoutbox.spi.OutboxRecord;
import io.txoutbox.spi.SendResult;
import io.txoutbox.testing.kafka.KafkaBroker;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.errors.RecordTooLargeException;
import org.apache.kafka.common.header.Header;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * {@link KafkaTransport.Mode#IDEMPOTENT} against a real broker: what it sends, what it defers to the next batch, and
 * that a key's records in one batch stand or fall together.
 */
class KafkaTransportIdempotentIT {

    private static KafkaBroker kafka;

    @BeforeAll
    static void startBroker() throws Exception {
        kafka = KafkaBroker.builder().property("auto.create.topics.enable", "false").start();
    }

    @AfterAll
    static void stopBroker() {
        if (kafka != null) {
            kafka.close();
        }
    }

    private static KafkaTransport.Builder idempotent() {
        return KafkaTransport.builder().bootstrapServers(kafka.bootstrapServers()).mode(KafkaTransport.Mode.IDEMPOTENT);
    }

    private static List<SendResult> send(KafkaTransport t, List<OutboxRecord> batch) throws Exception {
        List<SendResult> results = t.send("0", batch).toCompletableFuture().get(60, TimeUnit.SECONDS);
        assertThat(results).hasSize(batch.size());
        return results;
    }

    /** Sends like the relay does: what is not delivered (deferred, or failed) goes again, in order, next time. */
    private static int sendUntilDelivered(KafkaTransport t, List<OutboxRecord> batch) throws Exception {
        List<OutboxRecord> left = new ArrayList<>(batch);
        int rounds = 0;
        while (!left.isEmpty()) {
            rounds++;
            assertThat(rounds).as("rounds needed").isLessThan(1000);
            List<SendResult> results = send(t, left);
            List<OutboxRecord> next = new ArrayList<>();
            for (int i = 0; i < left.size(); i++) {
                SendResult r = results.get(i);
                if (!r.isDelivered()) {
                    assertThat(((SendResult.Failed) r).kind()).as("%s", r).isEqualTo(SendResult.Kind.COLLATERAL);
                    next.add(left.get(i));
                }
            }
            left = next;
        }
        return rounds;
    }

    private static UUID eventId(ConsumerRecord<byte[], byte[]> r) {
        Header h = r.headers().lastHeader(KafkaHeaders.EVENT_ID);
        return UUID.fromString(new String(h.value(), StandardCharsets.UTF_8));
    }

    private static Map<String, List<UUID>> byKey(List<OutboxRecord> records) {
        Map<String, List<UUID>> out = new LinkedHashMap<>();
        records.forEach(r -> out.computeIfAbsent(r.key(), k -> new ArrayList<>()).add(r.eventId()));
        return out;
    }

    private static Map<String, List<UUID>> readByKey(String topic) {
        Map<String, List<UUID>> out = new LinkedHashMap<>();
        for (ConsumerRecord<byte[], byte[]> r : ReadBack.readCommitted(kafka.bootstrapServers(), topic)) {
            out.computeIfAbsent(new String(r.key(), StandardCharsets.UTF_8), k -> new ArrayList<>()).add(eventId(r));
        }
        return out;
    }

    @Test
    void keysLandOnTheSamePartitionsAsWithKafkasOwnPartitionerAndInOrder() throws Exception {
        String topic = "idem-partitions";
        kafka.createTopic(topic, 5, Map.of());
        List<OutboxRecord> batch = new ArrayList<>();
        for (int i = 0; i < 600; i++) {
            batch.add(TestRecords.json(topic, "key-" + (i % 40), "{\"seq\":" + i + "}"));
        }
        List<OutboxRecord> same = new ArrayList<>();
        for (int i = 0; i < 40; i++) {
            same.add(TestRecords.json(topic, "key-" + i, "{}"));
        }
        List<SendResult> idem;
        List<SendResult> tx;
        try (KafkaTransport t = idempotent().build()) {
            idem = send(t, batch);
        }
        try (KafkaTransport t = KafkaTransport.builder().bootstrapServers(kafka.bootstrapServers())
                .transactionalIdPrefix("idem-cmp-").build()) {
            tx = send(t, same);
        }
        assertThat(idem).allMatch(SendResult::isDelivered);
        Map<String, Integer> partitionByKey = new HashMap<>();
        for (int i = 0; i < batch.size(); i++) {
            partitionByKey.put(batch.get(i).key(), ((SendResult.Delivered) idem.get(i)).partition());
        }
        for (int i = 0; i < same.size(); i++) {
            assertThat(((SendResult.Delivered) tx.get(i)).partition()).as("partition of %s", same.get(i).key())
                    .isEqualTo(partitionByKey.get(same.get(i).key()));
        }
        Map<String, List<UUID>> read = readByKey(topic);
        Map<String, List<UUID>> expected = byKey(batch);
        same.forEach(r -> expected.get(r.key()).add(r.eventId()));
        assertThat(read).isEqualTo(expected);
    }

    @Test
    void aKeyThatChangesTopicWithinABatchWaitsForTheNextBatch() throws Exception {
        kafka.createTopic("idem-a", 2, Map.of());
        kafka.createTopic("idem-b", 2, Map.of());
        OutboxRecord a1 = TestRecords.json("idem-a", "k", "{\"n\":1}");
        OutboxRecord b2 = TestRecords.json("idem-b", "k", "{\"n\":2}");
        OutboxRecord a3 = TestRecords.json("idem-a", "k", "{\"n\":3}");
        OutboxRecord other = TestRecords.json("idem-b", "other", "{}");
        try (KafkaTransport t = idempotent().build()) {
            List<SendResult> first = send(t, List.of(a1, b2, a3, other));
            assertThat(first.get(0).isDelivered()).isTrue();
            assertThat(((SendResult.Failed) first.get(1)).kind()).isEqualTo(SendResult.Kind.COLLATERAL);
            assertThat(((SendResult.Failed) first.get(2)).kind()).as("stays behind its key's deferred event")
                    .isEqualTo(SendResult.Kind.COLLATERAL);
            assertThat(first.get(3).isDelivered()).isTrue();
            List<SendResult> second = send(t, List.of(b2, a3));
            assertThat(second.get(0).isDelivered()).isTrue();
            assertThat(((SendResult.Failed) second.get(1)).kind()).isEqualTo(SendResult.Kind.COLLATERAL);
            assertThat(send(t, List.of(a3))).allMatch(SendResult::isDelivered);
        }
        assertThat(readByKey("idem-a").get("k")).containsExactly(a1.eventId(), a3.eventId());
        assertThat(readByKey("idem-b").get("k")).containsExactly(b2.eventId());
    }

    @Test
    void aPartitionGetsAtMostItsShareOfABatchAndTheRestFollowsInOrder() throws Exception {
        String topic = "idem-share";
        kafka.createTopic(topic, 1, Map.of());
        List<OutboxRecord> batch = new ArrayList<>();
        for (int i = 0; i < 60; i++) {
            batch.add(TestRecords.json(topic, "k" + (i % 3), "{\"seq\":" + i + ",\"pad\":\"" + "x".repeat(200) + "\"}"));
        }
        int rounds;
        try (KafkaTransport t = idempotent().property("batch.size", 4096).build()) {
            List<SendResult> first = send(t, batch);
            long delivered = first.stream().filter(SendResult::isDelivered).count();
            assertThat(delivered).as("a 2 KiB share holds a few 300-byte records, not 60").isBetween(1L, 10L);
            for (int i = 0; i < first.size(); i++) {
                assertThat(first.get(i).isDelivered()).as("record %d: a delivered prefix, then deferred", i)
                        .isEqualTo(i < delivered);
            }
            rounds = sendUntilDelivered(t, batch.subList((int) delivered, batch.size()));
        }
        assertThat(rounds).isGreaterThan(1);
        assertThat(readByKey(topic)).isEqualTo(byKey(batch));
    }

    @Test
    void aRecordOverTheTopicsLimitGoesAloneSoItsFailureCannotTakeOthersAlongOrLetItsKeyOvertake() throws Exception {
        String topic = "idem-small-messages";
        kafka.createTopic(topic, 1, Map.of("max.message.bytes", "2048"));
        byte[] big = new byte[10_000];
        new Random(42).nextBytes(big); // incompressible
        List<OutboxRecord> batch = new ArrayList<>();
        int culprit = 7;
        for (int i = 0; i < 16; i++) {
            String key = "k" + (i % 4);
            batch.add(i == culprit ? TestRecords.bytes(topic, key, big) : TestRecords.json(topic, key, "{\"seq\":" + i + "}"));
        }
        String culpritKey = batch.get(culprit).key();
        List<OutboxRecord> delivered = new ArrayList<>();
        try (KafkaTransport t = idempotent().build()) {
            List<OutboxRecord> left = new ArrayList<>(batch);
            boolean culpritFailed = false;
            for (int round = 0; round < 50 && !left.isEmpty(); round++) {
                List<SendResult> results = send(t, left);
                List<OutboxRecord> next = new ArrayList<>();
                String stopped = null;
                for (int i = 0; i < left.size(); i++) {
                    OutboxRecord r = left.get(i);
                    SendResult result = results.get(i);
                    if (result.isDelivered()) {
                        assertThat(r.key()).as("nothing of the culprit's key after it").isNotEqualTo(stopped);
                        delivered.add(r);
                    } else if (((SendResult.Failed) result).kind() == SendResult.Kind.PERMANENT) {
                        assertThat(r.eventId()).isEqualTo(batch.get(culprit).eventId());
                        assertThat(((SendResult.Failed) result).cause()).isInstanceOf(RecordTooLargeException.class);
                        culpritFailed = true;
                        stopped = r.key();
                    } else if (!r.key().equals(stopped)) {
                        next.add(r);
                    }
                }
                // the relay would park the culprit's key: its later records are not sent again
                if (stopped != null) {
                    String key = stopped;
                    next.removeIf(r -> r.key().equals(key));
                }
                left = next;
            }
            assertThat(culpritFailed).isTrue();
        }
        Map<String, List<UUID>> expected = new LinkedHashMap<>();
        for (int i = 0; i < batch.size(); i++) {
            OutboxRecord r = batch.get(i);
            if (!(r.key().equals(culpritKey) && i >= culprit)) {
                expected.computeIfAbsent(r.key(), k -> new ArrayList<>()).add(r.eventId());
            }
        }
        assertThat(readByKey(topic)).isEqualTo(expected);
        assertThat(byKey(delivered)).isEqualTo(expected);
    }
}
