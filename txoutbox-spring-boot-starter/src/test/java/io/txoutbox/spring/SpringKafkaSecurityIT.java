package io.txoutbox.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.micrometer.core.instrument.MeterRegistry;
import io.txoutbox.kafka.KafkaHeaders;
import io.txoutbox.kafka.KafkaInboxConsumer;
import io.txoutbox.micrometer.MicrometerRelayListener;
import io.txoutbox.spring.app.OrdersApplication;
import io.txoutbox.spring.app.PlaceOrder;
import io.txoutbox.testing.kafka.KafkaBrokerProcess;
import io.txoutbox.testing.postgres.TestDatabase;
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.Timeout;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.event.EventListener;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.event.ConsumerStoppedEvent;
import org.springframework.transaction.annotation.Transactional;

/**
 * Kafka configured once, through {@code spring.kafka.*} only, against a broker that takes SASL_SSL with SCRAM-SHA-512
 * and a certificate of its own CA (a broker JVM of Boot's managed Kafka version): the order service's
 * {@code @Transactional} handler publishes through {@link OutboxEventPublisher}, the starter's relay produces over
 * SASL and a {@code @KafkaListener} consumes over SASL, applying each event once through {@link TransactionalInbox}.
 * The same application with a wrong password delivers nothing: the events stay pending with the relay's reason in
 * {@code last_error} and its failure meter counting, and the listener's container stops on the authentication error.
 */
@Timeout(240)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class SpringKafkaSecurityIT {

    private static final String SCRAM = "org.apache.kafka.common.security.scram.ScramLoginModule required "
            + "username=\"%s\" password=\"%s\";";
    private static final String PAYMENT = "payment";
    private static KafkaBrokerProcess kafka;

    @BeforeAll
    static void startBroker() {
        kafka = KafkaBrokerProcess.builder().secure().start();
        kafka.createTopic(PlaceOrder.TOPIC, 3);
    }

    @AfterAll
    static void stopBroker() {
        if (kafka != null) {
            kafka.close();
        }
    }

    @Test
    @Order(1)
    void sasl_set_once_under_spring_kafka_reaches_the_relays_producer_and_the_listener() {
        TestDatabase db = database("sasl");
        try (ConfigurableApplicationContext app = start(db, kafka.scramPassword())) {
            PlaceOrder placeOrder = app.getBean(PlaceOrder.class);
            List<UUID> ids = new ArrayList<>();
            for (int i = 0; i < 20; i++) {
                ids.add(placeOrder.withJdbc("order-" + i, BigDecimal.valueOf(i), false));
            }

            JdbcTemplate jdbc = app.getBean(JdbcTemplate.class);
            await().atMost(Duration.ofSeconds(60)).until(() -> count(jdbc, "SELECT count(*) FROM payments") >= 20);
            assertThat(jdbc.queryForList("SELECT event_id FROM payments", UUID.class))
                    .as("every event paid exactly once, under the id the outbox gave it")
                    .containsExactlyInAnyOrderElementsOf(ids);
            assertThat(count(jdbc, "SELECT count(*) FROM outbox_event WHERE state = 'PUBLISHED'")).isEqualTo(20);
            assertThat(app.getBean(Payments.class).stops()).as("listener containers stopped").isEmpty();
        }
    }

    /** Runs second: the topic then holds the first test's events too, which a listener that connected would read. */
    @Test
    @Order(2)
    void a_wrong_password_delivers_nothing_and_the_relay_and_the_listener_report_it() throws Exception {
        // a record the listener would apply if it could connect, also when this test runs alone
        UUID waiting = UUID.randomUUID();
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(Map.of("bootstrap.servers",
                kafka.bootstrapServers()), new StringSerializer(), new StringSerializer())) {
            ProducerRecord<String, String> record = new ProducerRecord<>(PlaceOrder.TOPIC, "order-w", "{}");
            record.headers().add(KafkaHeaders.EVENT_ID, waiting.toString().getBytes(StandardCharsets.UTF_8));
            producer.send(record).get(30, TimeUnit.SECONDS);
        }
        String wrongPassword = "not-" + kafka.scramPassword().substring(3);
        String expected = "SASL authentication failed for user '" + kafka.scramUser() + "' (SCRAM-SHA-512) at broker "
                + kafka.saslSslBootstrapServers() + ": wrong password or unknown user (check sasl.jaas.config)";
        TestDatabase db = database("sasl_denied");
        try (ConfigurableApplicationContext app = start(db, wrongPassword)) {
            PlaceOrder placeOrder = app.getBean(PlaceOrder.class);
            for (int i = 0; i < 5; i++) {
                placeOrder.withJdbc("denied-" + i, BigDecimal.ONE, false);
            }
            JdbcTemplate jdbc = app.getBean(JdbcTemplate.class);
            MeterRegistry registry = app.getBean(MeterRegistry.class);
            Payments payments = app.getBean(Payments.class);

            await().atMost(Duration.ofSeconds(20)).untilAsserted(() -> {
                assertThat(count(jdbc, "SELECT count(*) FROM outbox_event WHERE state = 'PENDING'"
                        + " AND position(? IN last_error) > 0", expected))
                        .as("pending events whose last_error names the failure").isEqualTo(5);
                assertThat(failures(registry, "unavailable")).as("txoutbox.relay.failures{kind=unavailable}")
                        .isGreaterThanOrEqualTo(5);
                assertThat(payments.stops()).as("why the listener's container stopped")
                        .contains(ConsumerStoppedEvent.Reason.AUTH);
            });

            assertThat(count(jdbc, "SELECT count(*) FROM outbox_event WHERE state = 'PENDING' AND attempts = 0"))
                    .as("all pending, no attempt counted: it is the connection, not the events").isEqualTo(5);
            assertThat(registry.find(MicrometerRelayListener.PUBLISHED).counters()).allSatisfy(c ->
                    assertThat(c.count()).isZero());
            assertThat(app.getBean("txoutboxHealthIndicator", HealthIndicator.class).health().getDetails())
                    .containsEntry("pending", 5L);
            assertThat(count(jdbc, "SELECT count(*) FROM payments")).as("the listener applied nothing").isZero();
            assertThat(String.join("\n", jdbc.queryForList("SELECT last_error FROM outbox_event", String.class)))
                    .doesNotContain(wrongPassword).doesNotContain(kafka.tls().storePassword());
        }
    }

    /**
     * The order service with the payment listener; Kafka settings only under {@code spring.kafka.*}: the SASL_SSL
     * listener, SCRAM, the truststore with the broker's CA. Nothing under {@code txoutbox.kafka.*}.
     */
    private static ConfigurableApplicationContext start(TestDatabase db, String scramPassword) {
        List<String> args = new ArrayList<>();
        for (String property : StarterDatabase.properties(db)) {
            args.add("--" + property);
        }
        args.addAll(List.of(
                "--spring.jpa.hibernate.ddl-auto=create",
                "--spring.jpa.open-in-view=false",
                "--spring.flyway.enabled=false", "--spring.liquibase.enabled=false",
                "--spring.kafka.bootstrap-servers=" + kafka.saslSslBootstrapServers(),
                "--spring.kafka.security.protocol=SASL_SSL",
                "--spring.kafka.ssl.trust-store-location=file:" + kafka.tls().truststore(),
                "--spring.kafka.ssl.trust-store-password=" + kafka.tls().storePassword(),
                "--spring.kafka.ssl.trust-store-type=" + kafka.tls().storeType(),
                "--spring.kafka.properties.sasl.mechanism=SCRAM-SHA-512",
                "--spring.kafka.properties.sasl.jaas.config=" + String.format(SCRAM, kafka.scramUser(),
                        scramPassword),
                "--spring.kafka.consumer.auto-offset-reset=earliest",
                "--spring.kafka.consumer.isolation-level=read-committed",
                // each application a consumer group of its own, reading the topic from its start
                "--payments.group-id=payment-" + db.schema()));
        return new SpringApplicationBuilder(OrdersApplication.class, PaymentsConfiguration.class)
                .web(WebApplicationType.NONE).run(args.toArray(String[]::new));
    }

    private static TestDatabase database(String hint) {
        TestDatabase db = StarterDatabase.create(hint);
        db.execute("CREATE TABLE payments (event_id uuid NOT NULL, order_id text NOT NULL)");
        return db;
    }

    private static long count(JdbcTemplate jdbc, String sql, Object... args) {
        return jdbc.queryForObject(sql, Long.class, args);
    }

    private static double failures(MeterRegistry registry, String kind) {
        return registry.find(MicrometerRelayListener.FAILURES).tag("kind", kind).counters().stream()
                .mapToDouble(c -> c.count()).sum();
    }

    @Configuration(proxyBeanMethods = false)
    static class PaymentsConfiguration {
        @Bean
        Payments payments(JdbcTemplate jdbc, TransactionalInbox inbox) {
            return new Payments(jdbc, inbox);
        }
    }

    /** The payment service's listener: its effect, a row with the event's id, once per event. */
    static class Payments {
        private final JdbcTemplate jdbc;
        private final TransactionalInbox inbox;
        private final List<ConsumerStoppedEvent.Reason> stops = new CopyOnWriteArrayList<>();

        Payments(JdbcTemplate jdbc, TransactionalInbox inbox) {
            this.jdbc = jdbc;
            this.inbox = inbox;
        }

        @KafkaListener(topics = PlaceOrder.TOPIC, groupId = "${payments.group-id}")
        @Transactional
        public void on(ConsumerRecord<String, String> record) {
            UUID eventId = KafkaInboxConsumer.eventIdOf(record);
            inbox.once(PAYMENT, record, () -> jdbc.update("INSERT INTO payments (event_id, order_id) VALUES (?, ?)",
                    eventId, record.key()));
        }

        /** Spring Kafka stops a container whose consumer fails to authenticate (no auth-exception retry set). */
        @EventListener
        public void on(ConsumerStoppedEvent event) {
            stops.add(event.getReason());
        }

        public List<ConsumerStoppedEvent.Reason> stops() {
            return stops;
        }
    }
}
