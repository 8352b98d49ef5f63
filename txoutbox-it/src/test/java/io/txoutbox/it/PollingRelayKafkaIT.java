package io.txoutbox.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.txoutbox.FailurePolicy;
import io.txoutbox.Outbox;
import io.txoutbox.OutboxAdmin;
import io.txoutbox.OutboxMessage;
import io.txoutbox.OutboxSchema;
import io.txoutbox.PollingRelay;
import io.txoutbox.RetryPolicy;
import io.txoutbox.kafka.KafkaTransport;
import io.txoutbox.spi.Transport;
import io.txoutbox.testing.history.Delivery;
import io.txoutbox.testing.history.HistoryAssert;
import io.txoutbox.testing.history.HistoryReport;
import io.txoutbox.testing.history.LedgerWriter;
import io.txoutbox.testing.history.Verifier;
import io.txoutbox.testing.kafka.KafkaBroker;
import io.txoutbox.testing.postgres.TestDatabase;
import io.txoutbox.testing.postgres.TestPostgres;
import java.sql.Connection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.common.config.ConfigResource;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The polling relay with the Kafka transport on a real broker; the history checker decides. */
class PollingRelayKafkaIT {

    private static final Duration WAIT = Duration.ofSeconds(60);
    private static KafkaBroker kafka;

    private TestDatabase db;
    private OutboxSchema schema;
    private String topic;
    private final List<PollingRelay> relays = new ArrayList<>();

    @BeforeAll
    static void broker() {
        kafka = KafkaBroker.builder().property("auto.create.topics.enable", "false").start();
    }

    @AfterAll
    static void stopBroker() {
        kafka.close();
    }

    @BeforeEach
    void setUp() {
        db = TestPostgres.shared().newDatabase("relay_kafka");
        schema = ItSupport.schema(db);
        topic = "orders-" + UUID.randomUUID().toString().substring(0, 8);
        kafka.createTopic(topic, 3);
    }

    @AfterEach
    void tearDown() {
        relays.forEach(PollingRelay::close);
        db.close();
    }

    private PollingRelay start(PollingRelay.Builder b) {
        PollingRelay r = b.build();
        relays.add(r);
        return r.start();
    }

    private PollingRelay.Builder relay(Transport transport) {
        return PollingRelay.builder().dataSource(db.dataSource()).schema(schema).transport(transport)
                .name("it-" + UUID.randomUUID().toString().substring(0, 6)).batchSize(200)
                .pollInterval(Duration.ofMillis(50))
                .retry(RetryPolicy.defaults().withBackoff(Duration.ofMillis(50), Duration.ofMillis(500)));
    }

    private KafkaTransport kafkaTransport() {
        return KafkaTransport.builder().bootstrapServers(kafka.bootstrapServers()).build();
    }

    private OutboxMessage event(String key, String type, String payload) {
        return OutboxMessage.builder().topic(topic).aggregate("Order", key).eventType(type).jsonPayload(payload)
                .header("traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01").build();
    }

    private List<UUID> write(Outbox outbox, OutboxMessage... messages) throws Exception {
        try (Connection c = db.connect()) {
            c.setAutoCommit(false);
            List<UUID> ids = outbox.publish(c, messages);
            c.commit();
            return ids;
        }
    }

    private List<Delivery> read(long expected) {
        return Verifier.builder(kafka.bootstrapServers(), topic).expectedEvents(expected).deadline(WAIT).build()
                .readAll();
    }

    @Test
    void commit_is_delivered_with_its_headers_and_rollback_is_not() throws Exception {
        PollingRelay relay = start(relay(kafkaTransport()));
        Outbox outbox = Outbox.builder().schema(schema).afterPublish(relay::nudge).build();
        UUID committed = write(outbox, event("o-1", "OrderCreated", "{\"id\":1}")).get(0);
        try (Connection c = db.connect()) {
            c.setAutoCommit(false);
            outbox.publish(c, event("o-2", "OrderCreated", "{\"id\":2}"));
            c.rollback();
        }
        await().atMost(WAIT).until(() -> OutboxAdmin.create(db.dataSource(), schema).pendingCount() == 0);
        List<Delivery> deliveries = read(1);
        assertThat(deliveries).extracting(Delivery::eventId).containsExactly(committed);
        assertThat(deliveries.get(0).key()).isEqualTo("o-1");
    }

    @Test
    void out_of_id_order_commits_are_both_delivered() throws Exception {
        PollingRelay relay = start(relay(kafkaTransport()));
        Outbox outbox = Outbox.builder().schema(schema).afterPublish(relay::nudge).build();
        UUID late;
        UUID early;
        try (Connection a = db.connect(); Connection b = db.connect()) {
            a.setAutoCommit(false);
            b.setAutoCommit(false);
            late = outbox.publish(a, event("k-a", "First", "{}")).get(0);
            early = outbox.publish(b, event("k-b", "Second", "{}")).get(0);
            b.commit();
            await().atMost(WAIT).until(() -> relay.stats().published() == 1);
            a.commit();
        }
        await().atMost(WAIT).until(() -> relay.stats().published() == 2);
        assertThat(read(2)).extracting(Delivery::eventId).containsExactlyInAnyOrder(late, early);
    }

    @Test
    void a_record_failed_in_the_middle_of_a_batch_keeps_its_key_in_order_and_other_keys_flow() throws Exception {
        Outbox outbox = Outbox.builder().schema(schema).build();
        List<OutboxMessage> messages = new ArrayList<>();
        for (int seq = 1; seq <= 20; seq++) {
            for (int k = 0; k < 5; k++) {
                messages.add(OutboxMessage.builder().topic(topic).aggregate("Key", "k" + k).eventType("Seq")
                        .aggregateVersion(seq).jsonPayload("{\"seq\":" + seq + "}").build());
            }
        }
        List<UUID> ids = write(outbox, messages.toArray(new OutboxMessage[0]));
        UUID chosen = ids.get(5 * 9 + 2); // k2, seq 10: the middle of the batch
        boolean[] failedOnce = {false};
        FaultInjectingTransport faulty = new FaultInjectingTransport(kafkaTransport(), r -> {
            if (r.eventId().equals(chosen) && !failedOnce[0]) {
                failedOnce[0] = true;
                return true;
            }
            return false;
        });
        PollingRelay relay = start(relay(faulty).lanes(1));
        await().atMost(WAIT).until(() -> relay.stats().published() == 100);
        assertThat(faulty.injected()).isEqualTo(1);
        List<io.txoutbox.testing.history.LedgerEntry> ledger = new ArrayList<>();
        for (int i = 0; i < messages.size(); i++) {
            ledger.add(new io.txoutbox.testing.history.LedgerEntry(ids.get(i), messages.get(i).key(),
                    messages.get(i).aggregateVersion()));
        }
        HistoryReport report = io.txoutbox.testing.history.HistoryChecker.check(ledger, read(100));
        HistoryAssert.assertThat(report).isClean();
        assertThat(db.queryLong("SELECT attempts FROM " + schema.qualifiedOutboxTable() + " WHERE event_id = '"
                + chosen + "'")).isEqualTo(1);
    }

    @Test
    void poison_larger_than_the_broker_accepts_parks_its_key_and_release_resumes_in_order() throws Exception {
        String small = "small-" + UUID.randomUUID().toString().substring(0, 8);
        kafka.createTopic(small, 1, Map.of("max.message.bytes", "2000"));
        PollingRelay relay = start(relay(kafkaTransport()).failurePolicy(FailurePolicy.PARK_KEY));
        Outbox outbox = Outbox.builder().schema(schema).afterPublish(relay::nudge).build();
        String big = incompressibleJson(20_000);
        List<UUID> ids = write(outbox,
                msg(small, "k1", "E1", "{}"), msg(small, "k1", "Poison", big), msg(small, "k1", "E3", "{}"),
                msg(small, "k2", "E1", "{}"), msg(small, "k2", "E2", "{}"));
        OutboxAdmin admin = OutboxAdmin.create(db.dataSource(), schema);
        await().atMost(WAIT).until(() -> admin.parkedKeys(10).size() == 1);
        OutboxAdmin.ParkedKey parked = admin.parkedKeys(10).get(0);
        assertThat(parked.eventId()).isEqualTo(ids.get(1));
        assertThat(parked.lastError()).containsIgnoringCase("large");
        await().atMost(WAIT).until(() -> relay.stats().published() == 3);
        List<Delivery> before = Verifier.builder(kafka.bootstrapServers(), small).expectedEvents(3).deadline(WAIT)
                .build().readAll();
        assertThat(before).extracting(Delivery::eventId).containsExactlyInAnyOrder(ids.get(0), ids.get(3),
                ids.get(4));

        // the operator raises the topic's limit and releases the key: it resumes in order
        try (Admin a = Admin.create(Map.of("bootstrap.servers", kafka.bootstrapServers()))) {
            a.incrementalAlterConfigs(Map.of(new ConfigResource(ConfigResource.Type.TOPIC, small),
                    List.of(new AlterConfigOp(new ConfigEntry("max.message.bytes", "100000"),
                            AlterConfigOp.OpType.SET)))).all().get(30, TimeUnit.SECONDS);
        }
        assertThat(admin.retryNow(parked.eventId())).isTrue();
        await().atMost(WAIT).until(() -> relay.stats().published() == 5);
        List<Delivery> after = Verifier.builder(kafka.bootstrapServers(), small).expectedEvents(5).deadline(WAIT)
                .build().readAll();
        List<UUID> k1 = after.stream().filter(d -> "k1".equals(d.key())).map(Delivery::eventId).toList();
        assertThat(k1).containsExactly(ids.get(0), ids.get(1), ids.get(2));
    }

    @Test
    void poison_under_dead_letter_and_continue_goes_to_the_dead_letter_topic_and_the_key_moves_on()
            throws Exception {
        String small = "small-" + UUID.randomUUID().toString().substring(0, 8);
        String dlt = small + ".dlt";
        kafka.createTopic(small, 1, Map.of("max.message.bytes", "2000"));
        kafka.createTopic(dlt, 1);
        PollingRelay relay = start(relay(kafkaTransport()).failurePolicy(FailurePolicy.DEAD_LETTER_AND_CONTINUE)
                .deadLetterTopic(dlt));
        Outbox outbox = Outbox.builder().schema(schema).afterPublish(relay::nudge).build();
        String big = incompressibleJson(20_000);
        List<UUID> ids = write(outbox, msg(small, "k1", "E1", "{}"), msg(small, "k1", "Poison", big),
                msg(small, "k1", "E3", "{}"));
        await().atMost(WAIT).until(() -> relay.stats().deadLettered() == 1 && relay.stats().published() == 2);
        List<Delivery> main = Verifier.builder(kafka.bootstrapServers(), small).expectedEvents(2).deadline(WAIT)
                .build().readAll();
        assertThat(main).extracting(Delivery::eventId).containsExactly(ids.get(0), ids.get(2));
        List<Delivery> dead = Verifier.builder(kafka.bootstrapServers(), dlt).expectedEvents(1).deadline(WAIT)
                .build().readAll();
        assertThat(dead).extracting(Delivery::eventId).containsExactly(ids.get(1));
        assertThat(OutboxAdmin.create(db.dataSource(), schema).deadEvents(10)).hasSize(1);
    }

    /** The producer compresses (lz4): only random text stays larger than the topic's limit on the wire. */
    private static String incompressibleJson(int bytes) {
        byte[] random = new byte[bytes * 3 / 4];
        new Random(5).nextBytes(random);
        return "{\"blob\":\"" + java.util.Base64.getEncoder().encodeToString(random) + "\"}";
    }

    private static OutboxMessage msg(String topic, String key, String type, String payload) {
        return OutboxMessage.builder().topic(topic).aggregate("Order", key).eventType(type).jsonPayload(payload)
                .build();
    }

    @Test
    void twenty_writers_on_two_hundred_keys_with_injected_send_failures_lose_nothing_and_keep_order()
            throws Exception {
        Random random = new Random(11);
        FaultInjectingTransport faulty = new FaultInjectingTransport(kafkaTransport(),
                r -> random.nextInt(200) == 0);
        PollingRelay relay = start(relay(faulty).batchSize(500));
        Outbox outbox = Outbox.builder().schema(schema).afterPublish(relay::nudge).build();
        try (LedgerWriter writer = ItSupport.ledgerWriter(db, outbox, topic).threads(20).keys(200).events(10_000)
                .rollbackShare(0.05).build().start()) {
            assertThat(writer.awaitDone(Duration.ofMinutes(3))).isTrue();
            assertThat(writer.errors()).isEmpty();
        }
        await().atMost(WAIT).until(() -> OutboxAdmin.create(db.dataSource(), schema).pendingCount() == 0);
        HistoryReport report = ItSupport.check(db, kafka.bootstrapServers(), topic, WAIT);
        HistoryAssert.assertThat(report).isClean();
        assertThat(faulty.injected()).isGreaterThan(10);
        assertThat(report.committed()).isGreaterThan(9_000);
    }
}
