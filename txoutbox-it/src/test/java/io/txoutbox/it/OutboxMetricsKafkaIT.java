package io.txoutbox.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.txoutbox.Outbox;
import io.txoutbox.OutboxHealth;
import io.txoutbox.OutboxMessage;
import io.txoutbox.OutboxSchema;
import io.txoutbox.PollingRelay;
import io.txoutbox.micrometer.MicrometerRelayListener;
import io.txoutbox.micrometer.OutboxMeterBinder;
import io.txoutbox.kafka.KafkaTransport;
import io.txoutbox.testing.kafka.KafkaBrokerProcess;
import io.txoutbox.testing.postgres.TestDatabase;
import io.txoutbox.testing.postgres.TestPostgres;
import java.sql.Connection;
import java.time.Duration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The operator's view of a broker outage: with the real broker process stopped, the event age gauge rises and the
 * health check goes DOWN naming the topic; after the broker restarts, the backlog drains, the age falls to zero and
 * the health is UP again.
 */
class OutboxMetricsKafkaIT {

    private static final Duration WAIT = Duration.ofMinutes(2);

    private KafkaBrokerProcess broker;
    private TestDatabase db;
    private OutboxSchema schema;
    private final SimpleMeterRegistry registry = new SimpleMeterRegistry();

    @BeforeEach
    void setUp() {
        broker = KafkaBrokerProcess.builder().startTimeout(Duration.ofMinutes(3)).start();
        broker.createTopic("orders", 3);
        db = TestPostgres.shared().newDatabase("metrics_kafka");
        schema = ItSupport.schema(db);
    }

    @AfterEach
    void tearDown() {
        registry.close();
        if (db != null) {
            db.close();
        }
        if (broker != null) {
            broker.close();
        }
    }

    private void write(Outbox outbox, int from, int to) throws Exception {
        try (Connection c = db.connect()) {
            c.setAutoCommit(false);
            for (int i = from; i < to; i++) {
                outbox.publish(c, OutboxMessage.builder().topic("orders").aggregate("Order", "o" + (i % 7))
                        .eventType("E" + i).jsonPayload("{}").build());
            }
            c.commit();
        }
    }

    private double gauge(String name) {
        var g = registry.find(name).tags("topic", "orders").gauge();
        return g == null ? Double.NaN : g.value();
    }

    private double published() {
        var c = registry.find(MicrometerRelayListener.PUBLISHED).tags("topic", "orders").counter();
        return c == null ? 0 : c.count();
    }

    @Test
    void event_age_rises_while_the_broker_is_down_and_falls_after() throws Exception {
        try (PollingRelay relay = PollingRelay.builder().dataSource(db.dataSource()).schema(schema).name("metrics")
                .transport(KafkaTransport.builder().bootstrapServers(broker.bootstrapServers()).build())
                .outageBackoffMax(Duration.ofSeconds(1)).listener(new MicrometerRelayListener(registry))
                .build().start();
                OutboxMeterBinder gauges = new OutboxMeterBinder(db.dataSource(), schema, Duration.ofSeconds(1))) {
            gauges.bindTo(registry);
            OutboxHealth health = OutboxHealth.builder().dataSource(db.dataSource()).schema(schema).relay(relay)
                    .maxEventAge(Duration.ofSeconds(3)).build();
            Outbox outbox = Outbox.builder().schema(schema).afterPublish(relay::nudge).build();
            write(outbox, 0, 20);
            await().atMost(WAIT).until(() -> published() == 20);
            assertThat(health.check().isUp()).isTrue();

            broker.stop();
            write(outbox, 20, 40);
            await().atMost(WAIT).until(() -> gauge(OutboxMeterBinder.EVENT_AGE) > 3.0);
            assertThat(gauge(OutboxMeterBinder.PENDING)).isEqualTo(20.0);
            OutboxHealth.Result down = health.check();
            assertThat(down.isUp()).isFalse();
            assertThat(down.reasons()).anySatisfy(r -> assertThat(r).contains("topic orders"));
            // the producer gives up after max.block.ms or delivery.timeout.ms: then the outage counts as the broker's
            await().atMost(WAIT).until(() -> registry.find(MicrometerRelayListener.FAILURES)
                    .tags("kind", "unavailable").counter().count() > 0);

            broker.restart();
            await().atMost(WAIT).until(() -> published() == 40);
            await().atMost(WAIT).until(() -> gauge(OutboxMeterBinder.EVENT_AGE) == 0.0
                    && gauge(OutboxMeterBinder.PENDING) == 0.0);
            await().atMost(WAIT).until(() -> health.check().isUp());
            assertThat(registry.find(MicrometerRelayListener.PARKED).counter().count())
                    .as("an outage parks nothing").isZero();
        }
    }
}
