package io.txoutbox.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.txoutbox.micrometer.MicrometerRelayListener;
import io.txoutbox.micrometer.OutboxMeterBinder;
import io.txoutbox.spring.autoconfigure.TxoutboxAutoConfiguration;
import io.txoutbox.spring.autoconfigure.TxoutboxHealthAutoConfiguration;
import io.txoutbox.spring.autoconfigure.TxoutboxMetricsAutoConfiguration;
import io.txoutbox.spring.autoconfigure.TxoutboxTransportAutoConfiguration;
import io.txoutbox.spring.internal.RelayLifecycle;
import io.txoutbox.test.InMemoryTransport;
import io.txoutbox.testing.postgres.TestDatabase;
import java.time.Duration;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.boot.health.contributor.Status;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.jdbc.autoconfigure.DataSourceTransactionManagerAutoConfiguration;
import org.springframework.boot.micrometer.metrics.autoconfigure.MetricsAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.ApplicationContext;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * Health and metrics in Actuator's terms: two application instances share one outbox, and the standby that owns no
 * lane is UP (an orchestrator must not restart it) with the lane coverage as details; the outbox check's verdict
 * (an old pending event) turns only the opt-in readiness indicator DOWN; an outbox that cannot be read turns the
 * indicator DOWN; with a MeterRegistry the relay's meters and the outbox gauges are registered.
 */
class HealthAndMetricsIT {

    private static ApplicationContextRunner runner(TestDatabase db) {
        return new ApplicationContextRunner()
                .withConfiguration(AutoConfigurations.of(DataSourceAutoConfiguration.class,
                        DataSourceTransactionManagerAutoConfiguration.class, TxoutboxTransportAutoConfiguration.class,
                        TxoutboxAutoConfiguration.class, TxoutboxHealthAutoConfiguration.class,
                        TxoutboxMetricsAutoConfiguration.class,
                        // binds MeterBinder beans (the outbox gauges) to the registry, as in an application
                        MetricsAutoConfiguration.class))
                .withBean(MeterRegistry.class, SimpleMeterRegistry::new)
                .withPropertyValues(StarterDatabase.properties(db))
                .withPropertyValues("txoutbox.transport=in-memory", "txoutbox.relay.lanes=1",
                        "txoutbox.relay.lease-timeout=3s", "management.health.txoutbox-readiness.enabled=true");
    }

    @Test
    void a_standby_instance_owning_no_lane_is_up_and_the_lane_coverage_is_in_its_details() {
        TestDatabase db = StarterDatabase.create("health_standby");
        runner(db).run(active -> {
            assertThat(active).hasNotFailed();
            await().atMost(Duration.ofSeconds(20))
                    .until(() -> active.getBean(RelayLifecycle.class).relay().lanes().size() == 1);
            runner(db).run(standby -> {
                assertThat(standby).hasNotFailed();
                Health health = indicator(standby, "txoutboxHealthIndicator").health();
                assertThat(health.getStatus()).isEqualTo(Status.UP);
                assertThat(health.getDetails()).containsEntry("lanes", 1).containsEntry("lanesOwnedHere", 0)
                        .containsEntry("lanesWithoutOwner", 0).containsEntry("outbox", "UP");
                assertThat(indicator(standby, "txoutboxReadinessHealthIndicator").health().getStatus())
                        .isEqualTo(Status.UP);
                assertThat(indicator(active, "txoutboxHealthIndicator").health().getDetails())
                        .containsEntry("lanesOwnedHere", 1);
            });
        });
    }

    @Test
    void an_old_pending_event_turns_only_readiness_down_and_an_unreadable_outbox_turns_the_indicator_down() {
        TestDatabase db = StarterDatabase.create("health_down");
        runner(db).withPropertyValues("txoutbox.relay.enabled=false").run(context -> {
            assertThat(context).hasNotFailed();
            db.execute("INSERT INTO outbox_event (topic, partition_key, aggregate_type, aggregate_id, event_type,"
                    + " payload, created_at) VALUES ('orders', 'k1', 'Order', 'k1', 'E', '{}', now() - interval '10"
                    + " minutes')");
            Health status = indicator(context, "txoutboxHealthIndicator").health();
            assertThat(status.getStatus()).as("the outbox lags: details, not DOWN").isEqualTo(Status.UP);
            assertThat(status.getDetails()).containsEntry("outbox", "DOWN").containsEntry("pending", 1L);
            Health readiness = indicator(context, "txoutboxReadinessHealthIndicator").health();
            assertThat(readiness.getStatus()).isEqualTo(Status.DOWN);
            assertThat(readiness.getDetails().get("reasons").toString()).contains("topic orders");

            db.execute("ALTER TABLE outbox_event RENAME TO outbox_event_moved");
            try {
                assertThat(indicator(context, "txoutboxHealthIndicator").health().getStatus())
                        .as("this instance cannot read the outbox").isEqualTo(Status.DOWN);
            } finally {
                db.execute("ALTER TABLE outbox_event_moved RENAME TO outbox_event");
            }
        });
    }

    @Test
    void the_relays_meters_and_the_outbox_gauges_are_registered_with_the_applications_registry() {
        TestDatabase db = StarterDatabase.create("metrics");
        runner(db).run(context -> {
            MeterRegistry registry = context.getBean(MeterRegistry.class);
            OutboxEventPublisher publisher = context.getBean(OutboxEventPublisher.class);
            UUID id = new TransactionTemplate(context.getBean(PlatformTransactionManager.class))
                    .execute(s -> publisher.publish("orders", "k1", Map.of("total", 1)));
            context.getBean(InMemoryTransport.class).awaitDelivered(id, Duration.ofSeconds(20));
            await().atMost(Duration.ofSeconds(20)).untilAsserted(() -> assertThat(
                    registry.find(MicrometerRelayListener.PUBLISHED).counters().stream()
                            .mapToDouble(c -> c.count()).sum()).isGreaterThanOrEqualTo(1.0));
            assertThat(registry.find(OutboxMeterBinder.PARKED_KEYS).gauge()).isNotNull();
            assertThat(registry.find(OutboxMeterBinder.DEAD_EVENTS).gauge()).isNotNull();
        });
    }

    private static HealthIndicator indicator(ApplicationContext context, String name) {
        return context.getBean(name, HealthIndicator.class);
    }
}
