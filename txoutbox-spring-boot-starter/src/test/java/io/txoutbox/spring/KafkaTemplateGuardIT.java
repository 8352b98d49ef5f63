package io.txoutbox.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import io.txoutbox.InvalidConfigurationException;
import io.txoutbox.OutboxSchema;
import io.txoutbox.spring.autoconfigure.TxoutboxAutoConfiguration;
import io.txoutbox.spring.autoconfigure.TxoutboxGuardAutoConfiguration;
import io.txoutbox.spring.autoconfigure.TxoutboxTransportAutoConfiguration;
import io.txoutbox.spring.internal.KafkaTemplateGuard;
import io.txoutbox.testing.postgres.TestDatabase;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import javax.sql.DataSource;
import org.apache.kafka.clients.producer.MockProducer;
import org.apache.kafka.clients.producer.ProducerInterceptor;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.serialization.Serializer;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.hibernate.autoconfigure.HibernateJpaAutoConfiguration;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.jdbc.autoconfigure.DataSourceTransactionManagerAutoConfiguration;
import org.springframework.boot.jdbc.autoconfigure.JdbcTemplateAutoConfiguration;
import org.springframework.boot.kafka.autoconfigure.KafkaAutoConfiguration;
import org.springframework.boot.test.context.assertj.AssertableApplicationContext;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.transaction.autoconfigure.TransactionAutoConfiguration;
import org.springframework.context.ApplicationEventPublisher;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.kafka.core.KafkaTemplate;
import org.springframework.kafka.core.ProducerFactory;
import org.springframework.kafka.mock.MockProducerFactory;
import org.springframework.kafka.transaction.KafkaTransactionManager;
import org.springframework.orm.jpa.JpaTransactionManager;
import org.springframework.test.util.ReflectionTestUtils;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.annotation.Transactional;
import org.springframework.transaction.event.TransactionPhase;
import org.springframework.transaction.event.TransactionalEventListener;
import org.springframework.transaction.support.AbstractPlatformTransactionManager;
import org.springframework.transaction.support.TransactionSynchronizationManager;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * {@code txoutbox.guard.kafka-template} on Boot's own {@code KafkaTemplate} (KafkaAutoConfiguration) over spring-kafka's
 * {@code MockProducer}, with a real PostgreSQL transaction and no broker: a send inside a database transaction or from
 * an AFTER_COMMIT listener is refused ({@code fail}, nothing reaches the producer) or logged once per call site
 * ({@code warn}, sent); a send outside any transaction or in a Kafka-only transaction passes; {@code off}, the
 * default, leaves the template alone.
 */
class KafkaTemplateGuardIT {

    private static final TestDatabase db = StarterDatabase.create("guard");
    private static final String TOPIC = "order.events";

    static {
        db.execute("CREATE TABLE guard_order (id text PRIMARY KEY)");
    }

    private final ApplicationContextRunner runner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(DataSourceAutoConfiguration.class,
                    DataSourceTransactionManagerAutoConfiguration.class, JdbcTemplateAutoConfiguration.class,
                    TransactionAutoConfiguration.class, KafkaAutoConfiguration.class,
                    TxoutboxTransportAutoConfiguration.class, TxoutboxAutoConfiguration.class,
                    TxoutboxGuardAutoConfiguration.class))
            .withPropertyValues(StarterDatabase.properties(db))
            .withPropertyValues("txoutbox.transport=in-memory", "txoutbox.relay.enabled=false")
            .withUserConfiguration(Application.class);

    @Test
    void fail_refuses_a_send_inside_a_database_transaction_naming_the_outbox_and_nothing_reaches_the_producer() {
        runner.withUserConfiguration(PlainKafka.class).withPropertyValues("txoutbox.guard.kafka-template=fail")
                .run(context -> {
                    assertThat(context).hasNotFailed();
                    OrderHandler handler = context.getBean(OrderHandler.class);
                    MockKafka kafka = context.getBean(MockKafka.class);

                    assertThatThrownBy(() -> handler.placeAndSend("fail-1"))
                            .isInstanceOf(IllegalStateException.class)
                            .hasMessageContaining("inside a database transaction")
                            .hasMessageContaining("OutboxEventPublisher.publish")
                            .hasMessageContaining("docs/spring-boot.md")
                            .hasMessageContaining("KafkaTemplateGuardIT$OrderHandler.placeAndSend(")
                            .hasMessageContaining("Nothing was sent")
                            .hasMessageContaining("txoutbox.guard.kafka-template=fail");
                    TransactionTemplate tx = context.getBean(TransactionTemplate.class);
                    KafkaTemplate<Object, Object> template = template(context);
                    assertThatThrownBy(() -> tx.executeWithoutResult(s -> template.send(TOPIC, "fail-2", "placed")))
                            .isInstanceOf(IllegalStateException.class)
                            .hasMessageContaining("OutboxEventPublisher.publish");

                    assertThat(kafka.sent()).as("records that reached the producer").isEmpty();
                    assertThat(orders("fail-1")).as("the exception rolled the handler's transaction back").isZero();

                    // the way the message points to: the event commits with the order, and the guard stays quiet
                    UUID id = handler.placeAndPublish("fail-3");
                    assertThat(orders("fail-3")).isOne();
                    assertThat(db.queryLong("SELECT count(*) FROM " + context.getBean(OutboxSchema.class)
                            .qualifiedOutboxTable() + " WHERE event_id = '" + id + "'")).isOne();
                });
    }

    @Test
    void fail_flags_a_send_from_an_after_commit_transactional_event_listener() {
        runner.withUserConfiguration(PlainKafka.class).withPropertyValues("txoutbox.guard.kafka-template=fail")
                .run(context -> {
                    OrderHandler handler = context.getBean(OrderHandler.class);
                    AfterCommitSender listener = context.getBean(AfterCommitSender.class);

                    // Spring logs and swallows what an afterCompletion callback throws: the order is committed
                    handler.placeAndAnnounce("after-1");

                    assertThat(listener.received).as("the listener ran after the commit").containsExactly("after-1");
                    assertThat(listener.failures).singleElement().satisfies(e -> assertThat(e)
                            .isInstanceOf(IllegalStateException.class)
                            .hasMessageContaining("completion callbacks of a database transaction")
                            .hasMessageContaining("AFTER_COMMIT")
                            .hasMessageContaining("OutboxEventPublisher.publish")
                            .hasMessageContaining("KafkaTemplateGuardIT$AfterCommitSender.on("));
                    assertThat(context.getBean(MockKafka.class).sent()).isEmpty();
                    assertThat(orders("after-1")).isOne();
                });
    }

    @Test
    void fail_also_catches_both_patterns_on_a_jpa_transaction_manager() {
        runner.withConfiguration(AutoConfigurations.of(HibernateJpaAutoConfiguration.class))
                .withUserConfiguration(PlainKafka.class)
                .withPropertyValues("txoutbox.guard.kafka-template=fail", "spring.jpa.hibernate.ddl-auto=none")
                .run(context -> {
                    assertThat(context).hasNotFailed();
                    assertThat(context.getBean(PlatformTransactionManager.class))
                            .isInstanceOf(JpaTransactionManager.class);
                    OrderHandler handler = context.getBean(OrderHandler.class);

                    assertThatThrownBy(() -> handler.placeAndSend("jpa-1"))
                            .isInstanceOf(IllegalStateException.class)
                            .hasMessageContaining("inside a database transaction")
                            .hasMessageContaining("OutboxEventPublisher.publish");
                    handler.placeAndAnnounce("jpa-2");
                    assertThat(context.getBean(AfterCommitSender.class).failures).singleElement()
                            .satisfies(e -> assertThat(e).hasMessageContaining("AFTER_COMMIT"));

                    assertThat(context.getBean(MockKafka.class).sent()).isEmpty();
                    assertThat(orders("jpa-1")).isZero();
                    assertThat(orders("jpa-2")).isOne();
                });
    }

    @Test
    void a_send_outside_any_transaction_passes() {
        runner.withUserConfiguration(PlainKafka.class).withPropertyValues("txoutbox.guard.kafka-template=fail")
                .run(context -> {
                    OrderHandler handler = context.getBean(OrderHandler.class);
                    handler.sendWithoutTransaction("outside-1");
                    assertThat(keys(context.getBean(MockKafka.class).sent())).containsExactly("outside-1");

                    // the guard is on in this context: the same send inside the handler's transaction is refused
                    assertThatThrownBy(() -> handler.placeAndSend("outside-2"))
                            .isInstanceOf(IllegalStateException.class);
                    assertThat(keys(context.getBean(MockKafka.class).sent())).containsExactly("outside-1");
                });
    }

    @Test
    void a_send_in_a_kafka_only_transaction_passes() {
        runner.withUserConfiguration(TransactionalKafka.class)
                .withPropertyValues("txoutbox.guard.kafka-template=fail").run(context -> {
                    assertThat(context).hasNotFailed();
                    KafkaTemplate<Object, Object> template = template(context);
                    MockKafka kafka = context.getBean(MockKafka.class);
                    assertThat(template.isTransactional()).isTrue();

                    template.executeInTransaction(ops -> ops.send(TOPIC, "kafka-tx-1", "placed"));

                    KafkaTransactionManager<Object, Object> manager =
                            new KafkaTransactionManager<>(context.getBean(ProducerFactory.class));
                    new TransactionTemplate(manager).executeWithoutResult(s ->
                            template.send(TOPIC, "kafka-tx-2", "placed"));

                    // with synchronization on, a read on the DataSource in passing binds its (auto-commit)
                    // connection to the Kafka transaction: still no database transaction
                    manager.setTransactionSynchronization(AbstractPlatformTransactionManager.SYNCHRONIZATION_ALWAYS);
                    new TransactionTemplate(manager).executeWithoutResult(s -> {
                        context.getBean(JdbcTemplate.class).queryForObject("SELECT 1", Integer.class);
                        assertThat(TransactionSynchronizationManager.isActualTransactionActive()).isTrue();
                        assertThat(TransactionSynchronizationManager.hasResource(context.getBean(DataSource.class)))
                                .isTrue();
                        template.send(TOPIC, "kafka-tx-3", "placed");
                    });

                    assertThat(keys(kafka.sent())).as("committed by the Kafka transactions")
                            .containsExactly("kafka-tx-1", "kafka-tx-2", "kafka-tx-3");

                    // a Kafka transaction inside a database transaction is still the dual write
                    TransactionTemplate database = context.getBean(TransactionTemplate.class);
                    assertThatThrownBy(() -> database.executeWithoutResult(s -> template.executeInTransaction(
                            ops -> ops.send(TOPIC, "kafka-tx-4", "placed"))))
                            .hasMessageContaining("OutboxEventPublisher.publish");
                    assertThat(keys(kafka.sent())).containsExactly("kafka-tx-1", "kafka-tx-2", "kafka-tx-3");
                });
    }

    @Test
    void warn_logs_once_per_call_site_with_the_first_application_frame_and_sends() {
        ListAppender<ILoggingEvent> log = capture();
        try {
            runner.withUserConfiguration(PlainKafka.class).withPropertyValues("txoutbox.guard.kafka-template=warn")
                    .run(context -> {
                        OrderHandler handler = context.getBean(OrderHandler.class);
                        handler.placeAndSend("warn-1");
                        handler.placeAndSend("warn-2");
                        handler.placeAndAnnounce("warn-3");
                        handler.sendWithoutTransaction("warn-4");

                        assertThat(keys(context.getBean(MockKafka.class).sent()))
                                .containsExactly("warn-1", "warn-2", "warn-3", "warn-4");
                        assertThat(orders("warn-1") + orders("warn-2") + orders("warn-3")).isEqualTo(3);
                        assertThat(context.getBean(AfterCommitSender.class).failures).isEmpty();
                    });
        } finally {
            release(log);
        }
        List<ILoggingEvent> warnings = log.list.stream().filter(e -> e.getLevel() == Level.WARN).toList();
        assertThat(warnings).as("one per call site: placeAndSend (twice) and the AFTER_COMMIT listener")
                .hasSize(2);
        assertThat(warnings.get(0).getFormattedMessage())
                .contains("inside a database transaction")
                .contains("at io.txoutbox.spring.KafkaTemplateGuardIT$OrderHandler.placeAndSend(KafkaTemplateGuardIT.java:")
                .contains("OutboxEventPublisher.publish")
                .contains("Sent anyway").contains("txoutbox.guard.kafka-template=warn");
        assertThat(warnings.get(1).getFormattedMessage())
                .contains("completion callbacks of a database transaction")
                .contains("at io.txoutbox.spring.KafkaTemplateGuardIT$AfterCommitSender.on(KafkaTemplateGuardIT.java:");
    }

    @Test
    void off_by_default_leaves_the_template_alone() {
        runner.withUserConfiguration(PlainKafka.class).run(context -> {
            assertThat(context).hasNotFailed();
            assertThat(context.getBean(KafkaTemplateGuard.class).mode()).isEqualTo(KafkaTemplateGuard.Mode.OFF);
            assertThat(ReflectionTestUtils.getField(template(context), "producerInterceptor"))
                    .as("the template's producer interceptor").isNull();

            context.getBean(OrderHandler.class).placeAndSend("off-1");
            context.getBean(OrderHandler.class).placeAndAnnounce("off-2");

            assertThat(keys(context.getBean(MockKafka.class).sent())).containsExactly("off-1", "off-2");
            assertThat(orders("off-1") + orders("off-2")).isEqualTo(2);
        });
    }

    @Test
    void a_bad_value_fails_the_start_naming_the_setting_and_yamls_off_is_off() {
        runner.withUserConfiguration(PlainKafka.class).withPropertyValues("txoutbox.guard.kafka-template=strict")
                .run(context -> {
                    assertThat(context).hasFailed();
                    Throwable cause = context.getStartupFailure();
                    while (cause != null && !(cause instanceof InvalidConfigurationException)) {
                        cause = cause.getCause();
                    }
                    assertThat(cause).as("cause of %s", context.getStartupFailure()).isNotNull();
                    assertThat(cause.getMessage()).contains("txoutbox.guard.kafka-template")
                            .contains("off, warn, fail").contains("strict");
                });
        runner.withUserConfiguration(PlainKafka.class).withPropertyValues("txoutbox.guard.kafka-template=false")
                .run(context -> assertThat(context.getBean(KafkaTemplateGuard.class).mode())
                        .isEqualTo(KafkaTemplateGuard.Mode.OFF));
    }

    @Test
    void the_applications_own_interceptor_still_runs_after_the_guards_check() {
        MockKafka kafka = new MockKafka(false);
        KafkaTemplate<Object, Object> template = new KafkaTemplate<>(kafka.factory());
        List<Object> seen = new CopyOnWriteArrayList<>();
        template.setProducerInterceptor(new ProducerInterceptor<>() {
            @Override
            public ProducerRecord<Object, Object> onSend(ProducerRecord<Object, Object> record) {
                seen.add(record.key());
                return record;
            }

            @Override
            public void onAcknowledgement(RecordMetadata metadata, Exception exception) {
            }

            @Override
            public void close() {
            }

            @Override
            public void configure(Map<String, ?> configs) {
            }
        });
        new KafkaTemplateGuard(KafkaTemplateGuard.Mode.FAIL).postProcessAfterInitialization(template, "kafkaTemplate");

        template.send(TOPIC, "own-1", "placed");
        TransactionTemplate database = new TransactionTemplate(
                new org.springframework.jdbc.support.JdbcTransactionManager(db.dataSource()));
        assertThatThrownBy(() -> database.executeWithoutResult(s -> {
            new JdbcTemplate(db.dataSource()).update("INSERT INTO guard_order VALUES ('own-2')");
            template.send(TOPIC, "own-2", "placed");
        })).hasMessageContaining("OutboxEventPublisher.publish");

        assertThat(seen).as("keys the application's interceptor saw").containsExactly("own-1");
        assertThat(keys(kafka.sent())).containsExactly("own-1");
    }

    // --- the application -----------------------------------------------------------------------------------------

    record OrderPlaced(String id) {
    }

    static class OrderHandler {
        private final JdbcTemplate jdbc;
        private final KafkaTemplate<Object, Object> kafka;
        private final ApplicationEventPublisher events;
        private final OutboxEventPublisher outbox;

        OrderHandler(JdbcTemplate jdbc, KafkaTemplate<Object, Object> kafka, ApplicationEventPublisher events,
                OutboxEventPublisher outbox) {
            this.jdbc = jdbc;
            this.kafka = kafka;
            this.events = events;
            this.outbox = outbox;
        }

        /** The dual write: the order and a direct send in one database transaction. */
        @Transactional
        public void placeAndSend(String id) {
            jdbc.update("INSERT INTO guard_order VALUES (?)", id);
            kafka.send(TOPIC, id, "placed");
        }

        /** The other dual write: the order, then a send from an AFTER_COMMIT listener. */
        @Transactional
        public void placeAndAnnounce(String id) {
            jdbc.update("INSERT INTO guard_order VALUES (?)", id);
            events.publishEvent(new OrderPlaced(id));
        }

        /** The outbox's way. */
        @Transactional
        public UUID placeAndPublish(String id) {
            jdbc.update("INSERT INTO guard_order VALUES (?)", id);
            return outbox.publish(TOPIC, id, Map.of("id", id));
        }

        public void sendWithoutTransaction(String id) {
            kafka.send(TOPIC, id, "placed");
        }
    }

    static class AfterCommitSender {
        private final KafkaTemplate<Object, Object> kafka;
        final List<String> received = new CopyOnWriteArrayList<>();
        final List<RuntimeException> failures = new CopyOnWriteArrayList<>();

        AfterCommitSender(KafkaTemplate<Object, Object> kafka) {
            this.kafka = kafka;
        }

        @TransactionalEventListener(phase = TransactionPhase.AFTER_COMMIT)
        public void on(OrderPlaced event) {
            received.add(event.id());
            try {
                kafka.send(TOPIC, event.id(), "placed");
            } catch (RuntimeException e) {
                failures.add(e);
                throw e;
            }
        }
    }

    @Configuration(proxyBeanMethods = false)
    static class Application {
        @Bean
        OrderHandler orderHandler(JdbcTemplate jdbc, KafkaTemplate<Object, Object> kafka,
                ApplicationEventPublisher events, OutboxEventPublisher outbox) {
            return new OrderHandler(jdbc, kafka, events, outbox);
        }

        @Bean
        AfterCommitSender afterCommitSender(KafkaTemplate<Object, Object> kafka) {
            return new AfterCommitSender(kafka);
        }

        @Bean
        ProducerFactory<Object, Object> kafkaProducerFactory(MockKafka kafka) {
            return kafka.factory();
        }
    }

    @Configuration(proxyBeanMethods = false)
    static class PlainKafka {
        @Bean
        MockKafka mockKafka() {
            return new MockKafka(false);
        }
    }

    @Configuration(proxyBeanMethods = false)
    static class TransactionalKafka {
        @Bean
        MockKafka mockKafka() {
            return new MockKafka(true);
        }
    }

    /** Producers that never reach a broker, each one kept to read what reached it. */
    static final class MockKafka {
        private static final Serializer<Object> TEXT = (topic, data) ->
                data == null ? null : data.toString().getBytes(StandardCharsets.UTF_8);

        private final boolean transactional;
        private final List<MockProducer<Object, Object>> producers = new CopyOnWriteArrayList<>();

        MockKafka(boolean transactional) {
            this.transactional = transactional;
        }

        ProducerFactory<Object, Object> factory() {
            return transactional ? new MockProducerFactory<>((tx, id) -> create(tx), "tx-")
                    : new MockProducerFactory<>(() -> create(false));
        }

        private MockProducer<Object, Object> create(boolean transactional) {
            MockProducer<Object, Object> producer = new MockProducer<>(true, null, TEXT, TEXT);
            if (transactional) {
                producer.initTransactions();
            }
            producers.add(producer);
            return producer;
        }

        /** Every record sent (committed, for a transactional producer), in order of producers and sends. */
        List<ProducerRecord<Object, Object>> sent() {
            return producers.stream().flatMap(p -> p.history().stream()).toList();
        }
    }

    // --- helpers --------------------------------------------------------------------------------------------------

    @SuppressWarnings("unchecked")
    private static KafkaTemplate<Object, Object> template(AssertableApplicationContext context) {
        return context.getBean(KafkaTemplate.class);
    }

    private static List<Object> keys(List<ProducerRecord<Object, Object>> records) {
        return records.stream().map(ProducerRecord::key).toList();
    }

    private static long orders(String id) {
        return db.queryLong("SELECT count(*) FROM guard_order WHERE id = '" + id + "'");
    }

    private static ListAppender<ILoggingEvent> capture() {
        Logger logger = (Logger) LoggerFactory.getLogger(KafkaTemplateGuard.class);
        ListAppender<ILoggingEvent> appender = new ListAppender<>();
        appender.start();
        logger.addAppender(appender);
        return appender;
    }

    private static void release(ListAppender<ILoggingEvent> appender) {
        ((Logger) LoggerFactory.getLogger(KafkaTemplateGuard.class)).detachAppender(appender);
    }
}
