package io.txoutbox.testing.history;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

class VerifierIT {

    private static io.txoutbox.testing.kafka.KafkaBroker broker;

    @BeforeAll
    static void startBroker() throws Exception {
        broker = io.txoutbox.testing.kafka.KafkaBroker.start();
    }

    @AfterAll
    static void stopBroker() {
        if (broker != null) {
            broker.close();
        }
    }

    @Test
    void readsCommittedRecordsWithDuplicatesAndSkipsAbortedOnes() throws Exception {
        String topic = newTopic(3);
        List<LedgerEntry> ledger = ledger(4, 25); // 100 events
        UUID abortedEvent = UUID.randomUUID();
        try (KafkaProducer<byte[], byte[]> producer = producer(true)) {
            producer.initTransactions();
            producer.beginTransaction();
            ledger.forEach(event -> producer.send(record(topic, event.eventId(), event.key())));
            producer.commitTransaction();
            // a relay retrying its last batch: 5 already delivered events again
            producer.beginTransaction();
            ledger.subList(ledger.size() - 5, ledger.size())
                    .forEach(event -> producer.send(record(topic, event.eventId(), event.key())));
            producer.commitTransaction();
            // an aborted transaction at the very end: invisible to read_committed, and the drain must still end
            producer.beginTransaction();
            producer.send(record(topic, abortedEvent, "k-0001"));
            producer.flush();
            producer.abortTransaction();
        }

        List<Delivery> deliveries = Verifier.builder(broker.bootstrapServers(), topic)
                .deadline(Duration.ofSeconds(30)).build().readAll();

        assertThat(deliveries).hasSize(105);
        assertThat(deliveries).extracting(Delivery::eventId).doesNotContain(abortedEvent).doesNotContainNull();
        assertThat(deliveries).isSortedAccordingTo(
                Comparator.comparingInt(Delivery::partition).thenComparingLong(Delivery::offset));
        assertThat(deliveries).extracting(Delivery::partition).allMatch(p -> p >= 0 && p < 3);
        assertThat(deliveries).allSatisfy(d -> assertThat(d.timestampMs()).isPositive());

        HistoryReport report = HistoryChecker.check(ledger, deliveries);
        assertThat(report.committed()).isEqualTo(100);
        assertThat(report.delivered()).isEqualTo(100);
        assertThat(report.duplicates()).isEqualTo(5);
        assertThat(report.maxCopies()).isEqualTo(2);
        HistoryAssert.assertThat(report).isClean().hasAtMostDuplicates(5);
    }

    @Test
    void endToEndDetectsLossReorderAndPhantom() throws Exception {
        String topic = newTopic(2);
        List<LedgerEntry> ledger = ledger(2, 10);
        List<LedgerEntry> sent = new ArrayList<>(ledger);
        LedgerEntry dropped = find(sent, "k-0001", 4);  // never sent
        sent.remove(dropped);
        LedgerEntry late = find(sent, "k-0002", 3);     // sent after seq 5 of its key
        sent.remove(late);
        sent.add(sent.indexOf(find(sent, "k-0002", 5)) + 1, late);
        UUID phantom = UUID.randomUUID();
        try (KafkaProducer<byte[], byte[]> producer = producer(false)) {
            sent.forEach(event -> producer.send(record(topic, event.eventId(), event.key())));
            producer.send(record(topic, phantom, "k-0001"));
            producer.flush();
        }

        List<Delivery> deliveries = Verifier.builder(broker.bootstrapServers(), topic)
                .expectedEvents(20).deadline(Duration.ofSeconds(5)).build().readAll();
        HistoryReport report = HistoryChecker.check(ledger, deliveries);

        assertThat(deliveries).hasSize(20);
        assertThat(report.lost()).isEqualTo(1);
        assertThat(report.lostExamples()).containsExactly(dropped.eventId());
        assertThat(report.phantom()).isEqualTo(1);
        // k-0001: seq 5 overtakes the lost seq 4 (so do 6..10, each counted once); k-0002: seqs 4 and 5 overtake 3
        assertThat(report.orderViolations()).isEqualTo(6 + 2);
        assertThat(report.orderViolationExamples()).extracting(OrderViolation::key, OrderViolation::seq,
                        OrderViolation::expectedSeq)
                .contains(org.assertj.core.groups.Tuple.tuple("k-0001", 5L, 4L),
                        org.assertj.core.groups.Tuple.tuple("k-0002", 4L, 3L));
        assertThat(report.isClean()).isFalse();
    }

    @Test
    void customExtractorAndUnidentifiedRecords() throws Exception {
        String topic = newTopic(1);
        UUID first = UUID.randomUUID();
        UUID second = UUID.randomUUID();
        try (KafkaProducer<byte[], byte[]> producer = producer(false)) {
            producer.send(new ProducerRecord<>(topic, bytes("k-0001"), uuidBytes(first)));
            producer.send(new ProducerRecord<>(topic, bytes("k-0001"), uuidBytes(second)));
            producer.send(new ProducerRecord<>(topic, bytes("k-0001"), new byte[] {1, 2})); // not an id
            producer.flush();
        }

        List<Delivery> deliveries = Verifier.builder(broker.bootstrapServers(), topic)
                .eventIdExtractor(record -> {
                    ByteBuffer value = ByteBuffer.wrap(record.value());
                    return new UUID(value.getLong(), value.getLong()); // throws on short values
                })
                .build().readAll();

        assertThat(deliveries).extracting(Delivery::eventId).containsExactly(first, second, null);
        assertThat(deliveries).extracting(Delivery::offset).containsExactly(0L, 1L, 2L);
        HistoryReport report = HistoryChecker.check(
                List.of(new LedgerEntry(first, "k-0001", 1), new LedgerEntry(second, "k-0001", 2)), deliveries);
        assertThat(report.unidentified()).isEqualTo(1);
        assertThat(report.delivered()).isEqualTo(2);
        assertThat(report.isClean()).isFalse();
    }

    @Test
    void emptyTopicIsDrainedAtOnce() throws Exception {
        String topic = newTopic(2);
        long started = System.nanoTime();

        List<Delivery> deliveries = Verifier.builder(broker.bootstrapServers(), topic)
                .deadline(Duration.ofSeconds(20)).build().readAll();

        assertThat(deliveries).isEmpty();
        assertThat(Duration.ofNanos(System.nanoTime() - started)).isLessThan(Duration.ofSeconds(10));
    }

    @Test
    void waitsForExpectedEventsThatArriveLater() throws Exception {
        String topic = newTopic(1);
        List<LedgerEntry> ledger = ledger(1, 30);
        Thread lateProducer = new Thread(() -> {
            try (KafkaProducer<byte[], byte[]> producer = producer(false)) {
                for (LedgerEntry event : ledger) {
                    producer.send(record(topic, event.eventId(), event.key())).get();
                }
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        }, "late-producer");
        lateProducer.start();

        List<Delivery> deliveries = Verifier.builder(broker.bootstrapServers(), topic)
                .expectedEvents(30).deadline(Duration.ofSeconds(30)).quietPeriod(Duration.ofMillis(50))
                .build().readAll();
        lateProducer.join(Duration.ofSeconds(30).toMillis());

        HistoryAssert.assertThat(HistoryChecker.check(ledger, deliveries)).isClean().hasNoDuplicates().hasCommitted(30);
    }

    private static LedgerEntry find(List<LedgerEntry> entries, String key, long seq) {
        return entries.stream().filter(e -> e.key().equals(key) && e.seq() == seq).findFirst().orElseThrow();
    }

    private static String newTopic(int partitions) throws Exception {
        String topic = "history-" + UUID.randomUUID();
        broker.createTopic(topic, partitions);
        return topic;
    }

    /** {@code keys} keys with seqs 1..perKey each, interleaved round-robin. */
    private static List<LedgerEntry> ledger(int keys, int perKey) {
        List<LedgerEntry> ledger = new ArrayList<>();
        for (int key = 1; key <= keys; key++) {
            for (long seq = 1; seq <= perKey; seq++) {
                ledger.add(new LedgerEntry(UUID.randomUUID(), Ledger.keyName(key), seq));
            }
        }
        return ledger;
    }

    private static ProducerRecord<byte[], byte[]> record(String topic, UUID eventId, String key) {
        ProducerRecord<byte[], byte[]> record = new ProducerRecord<>(topic, bytes(key), bytes("{}"));
        record.headers().add(Verifier.DEFAULT_EVENT_ID_HEADER, bytes(eventId.toString()));
        return record;
    }

    private static KafkaProducer<byte[], byte[]> producer(boolean transactional) {
        Map<String, Object> config = new java.util.HashMap<>(Map.of(
                ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers(),
                ProducerConfig.ACKS_CONFIG, "all",
                ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true,
                ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class,
                ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class));
        if (transactional) {
            config.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, "verifier-it-" + UUID.randomUUID());
        }
        return new KafkaProducer<>(config);
    }

    private static byte[] bytes(String text) {
        return text.getBytes(StandardCharsets.UTF_8);
    }

    private static byte[] uuidBytes(UUID id) {
        return ByteBuffer.allocate(16).putLong(id.getMostSignificantBits()).putLong(id.getLeastSignificantBits())
                .array();
    }
}
