package io.txoutbox.kafka;

import static org.assertj.core.api.Assertions.assertThat;

import io.txoutbox.spi.OutboxRecord;
import io.txoutbox.spi.SendResult;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.errors.RecordTooLargeException;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.apache.kafka.common.header.Header;
import io.txoutbox.testing.kafka.KafkaBroker;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** KafkaTransport against a real single-node KRaft broker. */
class KafkaTransportIT {

    private static KafkaBroker kafka;

    @BeforeAll
    static void startBroker() throws Exception {
        // auto-creation off, as in production setups that rely on the missing-topic check
        kafka = KafkaBroker.builder().property("auto.create.topics.enable", "false").start();
    }

    @AfterAll
    static void stopBroker() {
        if (kafka != null) {
            kafka.close();
        }
    }

    private static KafkaTransport.Builder transport(String prefix) {
        return KafkaTransport.builder().bootstrapServers(kafka.bootstrapServers()).transactionalIdPrefix(prefix);
    }

    private static List<SendResult> send(KafkaTransport t, String lane, List<OutboxRecord> batch) throws Exception {
        List<SendResult> results = t.send(lane, batch).toCompletableFuture().get(60, TimeUnit.SECONDS);
        assertThat(results).hasSize(batch.size());
        return results;
    }

    private static Set<UUID> eventIds(List<ConsumerRecord<byte[], byte[]>> records) {
        return records.stream().map(KafkaTransportIT::eventId).collect(Collectors.toSet());
    }

    private static UUID eventId(ConsumerRecord<byte[], byte[]> r) {
        return UUID.fromString(header(r, KafkaHeaders.EVENT_ID));
    }

    private static String header(ConsumerRecord<byte[], byte[]> r, String name) {
        Header h = r.headers().lastHeader(name);
        return h == null ? null : new String(h.value(), StandardCharsets.UTF_8);
    }

    private static SendResult.Kind kind(SendResult result) {
        return result instanceof SendResult.Failed f ? f.kind() : null;
    }

    @Test
    void thousandRecordsOverFiftyKeysArriveInBatchOrderPerKeyWithHeaders() throws Exception {
        String topic = "orders-1000";
        kafka.createTopic(topic, 3, Map.of());
        List<OutboxRecord> batch = new ArrayList<>();
        for (int i = 0; i < 1000; i++) {
            String key = "order-" + (i % 50);
            batch.add(TestRecords.json(topic, key, "{\"key\":\"" + key + "\",\"seq\":" + i + "}"));
        }
        List<SendResult> results;
        try (KafkaTransport t = transport("it-bulk-").build()) {
            results = send(t, "0", batch);
        }
        assertThat(results).allSatisfy(r -> assertThat(r).isInstanceOf(SendResult.Delivered.class));

        List<ConsumerRecord<byte[], byte[]>> read = ReadBack.readCommitted(kafka.bootstrapServers(), topic);
        assertThat(read).hasSize(1000);
        Map<UUID, OutboxRecord> byId = new HashMap<>();
        Map<UUID, SendResult.Delivered> deliveredById = new HashMap<>();
        for (int i = 0; i < batch.size(); i++) {
            byId.put(batch.get(i).eventId(), batch.get(i));
            deliveredById.put(batch.get(i).eventId(), (SendResult.Delivered) results.get(i));
        }
        Map<String, Set<Integer>> partitionsByKey = new HashMap<>();
        Map<String, List<UUID>> readOrder = new LinkedHashMap<>();
        for (ConsumerRecord<byte[], byte[]> r : read) {
            OutboxRecord sent = byId.get(eventId(r));
            assertThat(sent).as("record read back that was not sent").isNotNull();
            String key = new String(r.key(), StandardCharsets.UTF_8);
            assertThat(key).isEqualTo(sent.key());
            assertThat(r.value()).isEqualTo(sent.value());
            assertThat(header(r, KafkaHeaders.EVENT_TYPE)).isEqualTo("OrderChanged");
            assertThat(header(r, KafkaHeaders.AGGREGATE_TYPE)).isEqualTo("Order");
            assertThat(header(r, KafkaHeaders.AGGREGATE_ID)).isEqualTo(sent.aggregateId());
            assertThat(header(r, KafkaHeaders.AGGREGATE_VERSION)).isEqualTo(sent.aggregateVersion().toString());
            assertThat(header(r, KafkaHeaders.CONTENT_TYPE)).isEqualTo("application/json");
            assertThat(header(r, "traceparent")).isEqualTo(TestRecords.TRACEPARENT);
            SendResult.Delivered d = deliveredById.get(sent.eventId());
            assertThat(d.partition()).isEqualTo(r.partition());
            assertThat(d.offset()).isEqualTo(r.offset());
            partitionsByKey.computeIfAbsent(key, k -> new HashSet<>()).add(r.partition());
            readOrder.computeIfAbsent(key, k -> new ArrayList<>()).add(sent.eventId());
        }
        assertThat(partitionsByKey).hasSize(50).allSatisfy((key, partitions) -> assertThat(partitions).hasSize(1));
        assertThat(partitionsByKey.values().stream().flatMap(Set::stream).collect(Collectors.toSet()))
                .as("50 keys should use more than one of 3 partitions").hasSizeGreaterThan(1);
        Map<String, List<UUID>> batchOrder = new HashMap<>();
        batch.forEach(r -> batchOrder.computeIfAbsent(r.key(), k -> new ArrayList<>()).add(r.eventId()));
        assertThat(readOrder).isEqualTo(batchOrder);
    }

    @Test
    void recordOverMaxRequestSizeIsPermanentAndStopsOnlyItsKey() throws Exception {
        String topic = "orders-oversize";
        kafka.createTopic(topic, 3, Map.of());
        List<OutboxRecord> batch = new ArrayList<>();
        int culprit = 12;
        for (int i = 0; i < 30; i++) {
            String key = "k" + (i % 5);
            batch.add(i == culprit ? TestRecords.bytes(topic, key, new byte[100_000])
                    : TestRecords.json(topic, key, "{\"seq\":" + i + "}"));
        }
        String culpritKey = batch.get(culprit).key();
        List<SendResult> results;
        try (KafkaTransport t = transport("it-oversize-").property("max.request.size", 65_536).build()) {
            results = send(t, "0", batch);
        }
        for (int i = 0; i < batch.size(); i++) {
            OutboxRecord r = batch.get(i);
            if (i == culprit) {
                assertThat(results.get(i)).isInstanceOfSatisfying(SendResult.Failed.class, f -> {
                    assertThat(f.kind()).isEqualTo(SendResult.Kind.PERMANENT);
                    assertThat(f.cause()).isInstanceOf(RecordTooLargeException.class)
                            .hasMessageContaining(r.eventId().toString());
                });
            } else if (r.key().equals(culpritKey) && i > culprit) {
                assertThat(kind(results.get(i))).as("record %d", i).isEqualTo(SendResult.Kind.COLLATERAL);
            } else {
                assertThat(results.get(i)).as("record %d", i).isInstanceOf(SendResult.Delivered.class);
            }
        }
        List<ConsumerRecord<byte[], byte[]>> read = ReadBack.readCommitted(kafka.bootstrapServers(), topic);
        Set<UUID> expected = new HashSet<>();
        for (int i = 0; i < batch.size(); i++) {
            if (!(batch.get(i).key().equals(culpritKey) && i >= culprit)) {
                expected.add(batch.get(i).eventId());
            }
        }
        assertThat(read).hasSize(expected.size());
        assertThat(eventIds(read)).isEqualTo(expected);
    }

    @Test
    void brokerRejectionInsideTheTransactionAbortsTheWholeBatch() throws Exception {
        String topic = "orders-small-messages";
        kafka.createTopic(topic, 3, Map.of("max.message.bytes", "2048"));
        List<OutboxRecord> batch = new ArrayList<>();
        int culprit = 9;
        byte[] big = new byte[10_000];
        new Random(42).nextBytes(big); // incompressible, so lz4 cannot bring it under the topic's limit
        for (int i = 0; i < 20; i++) {
            String key = "k" + (i % 4);
            batch.add(i == culprit ? TestRecords.bytes(topic, key, big)
                    : TestRecords.json(topic, key, "{\"seq\":" + i + "}"));
        }
        try (KafkaTransport t = transport("it-broker-reject-").build()) {
            List<SendResult> results = send(t, "0", batch);
            for (int i = 0; i < batch.size(); i++) {
                if (i == culprit) {
                    assertThat(results.get(i)).isInstanceOfSatisfying(SendResult.Failed.class, f -> {
                        assertThat(f.kind()).isEqualTo(SendResult.Kind.PERMANENT);
                        assertThat(f.cause()).isInstanceOf(RecordTooLargeException.class);
                    });
                } else {
                    assertThat(kind(results.get(i))).as("record %d: %s", i, results.get(i))
                            .isEqualTo(SendResult.Kind.COLLATERAL);
                }
            }
            assertThat(ReadBack.readCommitted(kafka.bootstrapServers(), topic)).as("nothing of an aborted batch is visible").isEmpty();

            List<OutboxRecord> withoutCulprit = new ArrayList<>(batch);
            withoutCulprit.remove(culprit);
            List<SendResult> retry = send(t, "0", withoutCulprit);
            assertThat(retry).allSatisfy(r -> assertThat(r).isInstanceOf(SendResult.Delivered.class));
        }
        List<ConsumerRecord<byte[], byte[]>> read = ReadBack.readCommitted(kafka.bootstrapServers(), topic);
        assertThat(read).hasSize(19);
        assertThat(eventIds(read)).doesNotContain(batch.get(culprit).eventId());
    }

    @Test
    void olderProducerOfALaneIsFencedAndNothingOfItsBatchIsVisible() throws Exception {
        String topic = "orders-fencing";
        kafka.createTopic(topic, 3, Map.of());
        List<OutboxRecord> first = batch(topic, "a", 10);
        List<OutboxRecord> second = batch(topic, "b", 10);
        List<OutboxRecord> zombie = batch(topic, "z", 10);
        List<OutboxRecord> fourth = batch(topic, "d", 10);
        try (KafkaTransport older = transport("it-fence-").build();
                KafkaTransport newer = transport("it-fence-").build()) {
            assertThat(send(older, "lane-7", first)).allMatch(SendResult::isDelivered);
            assertThat(send(newer, "lane-7", second)).allMatch(SendResult::isDelivered);

            List<SendResult> fenced = send(older, "lane-7", zombie);
            assertThat(fenced).allSatisfy(r -> assertThat(r).isInstanceOfSatisfying(SendResult.Failed.class, f -> {
                assertThat(f.kind()).isEqualTo(SendResult.Kind.UNAVAILABLE);
                assertThat(f.cause()).hasMessageContaining("fenced");
            }));

            assertThat(send(newer, "lane-7", fourth)).allMatch(SendResult::isDelivered);
        }
        Set<UUID> expected = new HashSet<>();
        for (List<OutboxRecord> b : List.of(first, second, fourth)) {
            b.forEach(r -> expected.add(r.eventId()));
        }
        List<ConsumerRecord<byte[], byte[]>> read = ReadBack.readCommitted(kafka.bootstrapServers(), topic);
        assertThat(eventIds(read)).isEqualTo(expected);
        assertThat(read).hasSize(30);
    }

    @Test
    void missingTopicIsPermanentOnceTheBrokerConfirmsIt() throws Exception {
        String existing = "orders-existing";
        kafka.createTopic(existing, 1, Map.of());
        List<OutboxRecord> batch = List.of(
                TestRecords.json(existing, "k1", "{}"),
                TestRecords.json("no-such-topic", "k2", "{}"),
                TestRecords.json(existing, "k1", "{}"));
        try (KafkaTransport t = transport("it-missing-").property("max.block.ms", 2000).build()) {
            List<SendResult> results = send(t, "0", batch);
            assertThat(results.get(1)).isInstanceOfSatisfying(SendResult.Failed.class, f -> {
                assertThat(f.kind()).isEqualTo(SendResult.Kind.PERMANENT);
                assertThat(f.cause()).isInstanceOf(UnknownTopicOrPartitionException.class)
                        .hasMessageContaining("no-such-topic");
            });
            assertThat(kind(results.get(0))).isEqualTo(SendResult.Kind.COLLATERAL);
            assertThat(kind(results.get(2))).isEqualTo(SendResult.Kind.COLLATERAL);
        }
        assertThat(ReadBack.readCommitted(kafka.bootstrapServers(), existing)).isEmpty();
    }

    private static List<OutboxRecord> batch(String topic, String prefix, int n) {
        List<OutboxRecord> records = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            records.add(TestRecords.json(topic, prefix + (i % 3), "{\"seq\":" + i + "}"));
        }
        return records;
    }
}
