package io.txoutbox.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.micrometer.tracing.Span;
import io.micrometer.tracing.Tracer;
import io.txoutbox.Inbox;
import io.txoutbox.InboxHandler;
import io.txoutbox.kafka.KafkaHeaders;
import io.txoutbox.kafka.KafkaTransport;
import io.txoutbox.spi.Transport;
import io.txoutbox.spring.app.OrdersApplication;
import io.txoutbox.spring.app.PlaceOrder;
import io.txoutbox.testing.kafka.KafkaBrokerProcess;
import io.txoutbox.testing.postgres.TestDatabase;
import java.math.BigDecimal;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.TestConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import org.springframework.transaction.annotation.Transactional;

/**
 * The order service and a payment listener in one application on a real broker (its own JVM; this module runs on
 * Spring Boot's managed kafka-clients): Kafka is configured once, with {@code spring.kafka.*}, for the relay's producer
 * and the listener; the relay publishes each committed event; the {@code @KafkaListener} applies each event once
 * through {@link TransactionalInbox}, also when Kafka delivers a record twice.
 */
@SpringBootTest(classes = {OrdersApplication.class, KafkaRelayAndInboxIT.Payments.class}, properties = {
        "txoutbox.relay.lanes=2",
        "spring.jpa.hibernate.ddl-auto=create",
        "spring.jpa.open-in-view=false",
        "spring.flyway.enabled=false",
        "spring.liquibase.enabled=false",
        "spring.kafka.consumer.auto-offset-reset=earliest",
        "spring.kafka.consumer.isolation-level=read-committed",
        // tracing: every span sampled, the listener container observes (continues the trace in the record's headers)
        "management.tracing.sampling.probability=1.0",
        "spring.kafka.listener.observation-enabled=true",
        // the durable inbox's worker for the shipping consumer (ShippingListener stores, the InboxHandler applies)
        "txoutbox.inbox-worker.consumer=shipping",
        "txoutbox.inbox-worker.lanes=2"})
class KafkaRelayAndInboxIT {

    private static final TestDatabase db = StarterDatabase.create("kafka");
    private static final KafkaBrokerProcess kafka = KafkaBrokerProcess.builder().start();

    static {
        db.execute("CREATE TABLE payments (order_id text NOT NULL)",
                "CREATE TABLE shipments (order_id text NOT NULL)");
        kafka.createTopic(PlaceOrder.TOPIC, 3);
    }

    @DynamicPropertySource
    static void services(DynamicPropertyRegistry registry) {
        StarterDatabase.register(registry, db);
        registry.add("spring.kafka.bootstrap-servers", kafka::bootstrapServers);
    }

    @AfterAll
    static void stopBroker() {
        kafka.close();
    }

    @TestConfiguration
    static class Payments {
        @Bean
        PaymentListener paymentListener(JdbcTemplate jdbc, TransactionalInbox inbox, Tracer tracer) {
            return new PaymentListener(jdbc, inbox, tracer);
        }

        @Bean
        ShippingListener shippingListener(TransactionalInbox inbox) {
            return new ShippingListener(inbox);
        }

        /** The shipping consumer's effects, applied by the inbox worker in its own transaction. */
        @Bean
        InboxHandler shipOrder() {
            return (connection, event) -> {
                try (java.sql.PreparedStatement ps = connection.prepareStatement(
                        "INSERT INTO shipments (order_id) VALUES (?)")) {
                    ps.setString(1, event.key());
                    ps.executeUpdate();
                }
            };
        }
    }

    /** A critical flow: the listener only stores the record in the durable inbox; the worker applies it later. */
    static class ShippingListener {
        private final TransactionalInbox inbox;
        private final List<Boolean> stored = new CopyOnWriteArrayList<>();

        ShippingListener(TransactionalInbox inbox) {
            this.inbox = inbox;
        }

        @KafkaListener(topics = PlaceOrder.TOPIC, groupId = "shipping")
        @Transactional
        public void on(ConsumerRecord<String, String> record) {
            stored.add(inbox.receive("shipping", record));
        }

        public List<Boolean> stored() {
            return stored;
        }
    }

    /** The payment service's listener, as the design notes write it (a transactional proxy: read it by methods). */
    static class PaymentListener {
        private final List<UUID> received = new CopyOnWriteArrayList<>();
        private final List<Inbox.Outcome> outcomes = new CopyOnWriteArrayList<>();
        private final Map<UUID, String> traceIds = new ConcurrentHashMap<>();
        private final JdbcTemplate jdbc;
        private final TransactionalInbox inbox;
        private final Tracer tracer;

        PaymentListener(JdbcTemplate jdbc, TransactionalInbox inbox, Tracer tracer) {
            this.jdbc = jdbc;
            this.inbox = inbox;
            this.tracer = tracer;
        }

        @KafkaListener(topics = PlaceOrder.TOPIC, groupId = "payment")
        @Transactional
        public void on(ConsumerRecord<String, String> record) {
            UUID eventId = io.txoutbox.kafka.KafkaInboxConsumer.eventIdOf(record);
            Span span = tracer.currentSpan();
            if (span != null) {
                traceIds.put(eventId, span.context().traceId());
            }
            received.add(eventId);
            outcomes.add(inbox.once("payment", record,
                    () -> jdbc.update("INSERT INTO payments (order_id) VALUES (?)", record.key())));
        }

        public List<UUID> received() {
            return received;
        }

        public List<Inbox.Outcome> outcomes() {
            return outcomes;
        }

        public Map<UUID, String> traceIds() {
            return traceIds;
        }
    }

    @Autowired
    PlaceOrder placeOrder;
    @Autowired
    PaymentListener listener;
    @Autowired
    JdbcTemplate jdbc;
    @Autowired
    Transport transport;
    @Autowired
    Tracer tracer;
    @Autowired
    ShippingListener shipping;

    @Test
    void each_committed_order_is_published_to_kafka_and_paid_once_also_when_a_record_arrives_twice() throws Exception {
        assertThat(transport).as("the transport Spring's Kafka settings configured").isInstanceOf(KafkaTransport.class);
        List<UUID> ids = new ArrayList<>();
        for (int i = 0; i < 20; i++) {
            ids.add(placeOrder.withJdbc("order-" + i, BigDecimal.valueOf(i), false));
        }
        // the listener records an id before its transaction commits: wait for the payments themselves
        await().atMost(Duration.ofSeconds(60)).until(() -> listener.received().containsAll(ids) && payments() >= 20);
        assertThat(payments()).as("each order paid once").isEqualTo(20);

        // Kafka delivers at least once: the same event again (same event_id header) must change nothing
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(Map.of("bootstrap.servers",
                kafka.bootstrapServers()), new StringSerializer(), new StringSerializer())) {
            ProducerRecord<String, String> again = new ProducerRecord<>(PlaceOrder.TOPIC, "order-0", "{}");
            again.headers().add(KafkaHeaders.EVENT_ID, ids.get(0).toString().getBytes());
            producer.send(again).get();
        }
        // the outcome is recorded after the inbox has answered, the id before: wait for the outcome
        await().atMost(Duration.ofSeconds(30))
                .until(() -> listener.outcomes().stream().anyMatch(o -> o == Inbox.Outcome.DUPLICATE));
        assertThat(listener.received()).filteredOn(ids.get(0)::equals).hasSize(2);
        assertThat(listener.outcomes()).filteredOn(o -> o == Inbox.Outcome.DUPLICATE).hasSize(1);
        assertThat(payments()).as("the duplicate was not paid again").isEqualTo(20);

        // the durable inbox: every order stored once (the duplicate refused by its event id) and shipped once
        await().atMost(Duration.ofSeconds(60)).until(() -> shipping.stored().contains(false) && shipments() >= 20);
        assertThat(shipping.stored()).filteredOn(stored -> !stored).hasSize(1);
        assertThat(jdbc.queryForObject("SELECT count(*) FROM inbox_event WHERE consumer = 'shipping' "
                + "AND state = 'PROCESSED' AND partition_key LIKE 'order-%'", Long.class)).isEqualTo(20);
        assertThat(shipments()).isEqualTo(20);
    }

    private long shipments() {
        return jdbc.queryForObject("SELECT count(*) FROM shipments WHERE order_id LIKE 'order-%'", Long.class);
    }

    @Test
    void the_trace_of_the_request_that_published_continues_in_the_listener() {
        Span request = tracer.nextSpan().name("place-order").start();
        UUID id;
        try (Tracer.SpanInScope scope = tracer.withSpan(request)) {
            id = placeOrder.withJdbc("traced-1", BigDecimal.ONE, false);
        } finally {
            request.end();
        }
        assertThat(jdbc.queryForObject("SELECT headers ->> 'traceparent' FROM outbox_event WHERE event_id = ?",
                String.class, id)).as("the W3C traceparent in the event's headers")
                .startsWith("00-" + request.context().traceId() + "-");
        await().atMost(Duration.ofSeconds(60)).until(() -> listener.traceIds().containsKey(id));
        assertThat(listener.traceIds().get(id)).as("the listener's trace").isEqualTo(request.context().traceId());
    }

    /** The payments of the first test's orders (the trace test pays its own order, in either test order). */
    private long payments() {
        return jdbc.queryForObject("SELECT count(*) FROM payments WHERE order_id LIKE 'order-%'", Long.class);
    }
}
