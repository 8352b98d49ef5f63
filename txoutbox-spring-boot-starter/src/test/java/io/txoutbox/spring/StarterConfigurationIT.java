package io.txoutbox.spring;

import static org.assertj.core.api.Assertions.assertThat;

import io.txoutbox.InboxHandler;
import io.txoutbox.InvalidConfigurationException;
import io.txoutbox.Outbox;
import io.txoutbox.OutboxSchema;
import io.txoutbox.PollingRelay;
import io.txoutbox.RelayConfig;
import io.txoutbox.spring.autoconfigure.TxoutboxAutoConfiguration;
import io.txoutbox.spring.autoconfigure.TxoutboxHealthAutoConfiguration;
import io.txoutbox.spring.autoconfigure.TxoutboxMetricsAutoConfiguration;
import io.txoutbox.spring.autoconfigure.TxoutboxTransportAutoConfiguration;
import io.txoutbox.spring.internal.RelayLifecycle;
import io.txoutbox.spring.internal.TxoutboxFailureAnalyzer;
import io.txoutbox.test.InMemoryTransport;
import io.txoutbox.testing.postgres.TestDatabase;
import java.time.Duration;
import java.util.Set;
import java.util.stream.Collectors;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.support.AbstractBeanDefinition;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.diagnostics.FailureAnalysis;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.jdbc.autoconfigure.DataSourceTransactionManagerAutoConfiguration;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

/**
 * The starter's configuration on a real database: {@code txoutbox.*} properties reach the components under core's
 * names (also as environment variables), a bad value fails the start naming the property, the relay can be turned
 * off, and closing the context stops the relay and leaves no txoutbox thread behind.
 */
class StarterConfigurationIT {

    private static final TestDatabase db = StarterDatabase.create("config");

    private final ApplicationContextRunner runner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(DataSourceAutoConfiguration.class,
                    DataSourceTransactionManagerAutoConfiguration.class, TxoutboxTransportAutoConfiguration.class,
                    TxoutboxAutoConfiguration.class, TxoutboxHealthAutoConfiguration.class,
                    TxoutboxMetricsAutoConfiguration.class))
            .withPropertyValues(StarterDatabase.properties(db))
            .withPropertyValues("txoutbox.transport=in-memory");

    @Test
    void properties_reach_the_relay_and_the_outbox_under_cores_names() {
        runner.withPropertyValues("txoutbox.relay.batch-size=250", "txoutbox.relay.poll-interval=750ms",
                "txoutbox.relay.retry.max-attempts=3", "txoutbox.outbox.max-payload-bytes=64KB",
                "txoutbox.relay.lanes=2").run(context -> {
                    assertThat(context).hasNotFailed();
                    RelayConfig relay = context.getBean(RelayLifecycle.class).relay().config();
                    assertThat(relay.batchSize()).isEqualTo(250);
                    assertThat(relay.pollInterval()).isEqualTo(Duration.ofMillis(750));
                    assertThat(relay.retry().maxAttempts()).isEqualTo(3);
                    assertThat(relay.lanes()).isEqualTo(2);
                    assertThat(context.getBean(Outbox.class).config().maxPayloadBytes()).isEqualTo(64 * 1024);
                    assertThat(context.getBean(OutboxSchema.class).schema()).isEqualTo(db.schema());
                    assertThat(context.getBean(io.txoutbox.spi.Transport.class)).isInstanceOf(InMemoryTransport.class);
                });
    }

    @Test
    void unset_properties_keep_the_cores_defaults() {
        runner.run(context -> {
            RelayConfig relay = context.getBean(RelayLifecycle.class).relay().config();
            assertThat(relay.batchSize()).isEqualTo(RelayConfig.DEFAULT_BATCH_SIZE);
            assertThat(relay.pollInterval()).isEqualTo(RelayConfig.DEFAULT_POLL_INTERVAL);
            assertThat(relay.lanes()).isEqualTo(RelayConfig.DEFAULT_LANES);
        });
    }

    @Test
    void a_bad_value_fails_the_start_naming_the_property_and_the_failure_report_says_where_to_fix_it() {
        runner.withPropertyValues("txoutbox.relay.batch-size=0").run(context -> {
            assertThat(context).hasFailed();
            Throwable failure = context.getStartupFailure();
            InvalidConfigurationException cause = findCause(failure, InvalidConfigurationException.class);
            assertThat(cause).as("cause of %s", failure).isNotNull();
            assertThat(cause.getMessage()).contains("txoutbox.relay.batch-size").contains("0");
            FailureAnalysis analysis = new TxoutboxFailureAnalyzer().analyze(failure);
            assertThat(analysis.getDescription()).contains("txoutbox.relay.batch-size");
            assertThat(analysis.getAction()).contains("application.properties").contains("TXOUTBOX_RELAY_BATCH_SIZE");
        });
        runner.withPropertyValues("txoutbox.relay.poll-interval=soon").run(context -> {
            assertThat(findCause(context.getStartupFailure(), InvalidConfigurationException.class).getMessage())
                    .contains("txoutbox.relay.poll-interval").contains("soon");
        });
        runner.withPropertyValues("txoutbox.schema.migrate=sometimes").run(context ->
                assertThat(findCause(context.getStartupFailure(), InvalidConfigurationException.class).getMessage())
                        .contains("txoutbox.schema.migrate").contains("auto, always, never"));
    }

    @Test
    void a_service_that_only_writes_turns_the_relay_off_and_still_publishes() {
        runner.withPropertyValues("txoutbox.relay.enabled=false").run(context -> {
            assertThat(context).hasNotFailed();
            assertThat(context).doesNotHaveBean(RelayLifecycle.class);
            assertThat(context).hasSingleBean(OutboxEventPublisher.class);
        });
    }

    @Test
    void in_memory_transport_without_txoutbox_test_on_the_classpath_fails_naming_the_dependency() {
        runner.withClassLoader(new FilteredClassLoader(InMemoryTransport.class)).run(context -> {
            assertThat(context).hasFailed();
            assertThat(findCause(context.getStartupFailure(), InvalidConfigurationException.class).getMessage())
                    .contains("io.txoutbox:txoutbox-test").contains("txoutbox.transport");
        });
    }

    @Test
    void closing_the_context_stops_the_relay_and_leaves_no_txoutbox_thread() {
        runner.withPropertyValues("txoutbox.relay.lanes=2").run(context -> {
            PollingRelay relay = context.getBean(RelayLifecycle.class).relay();
            org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(20)).until(() -> relay.lanes().size() == 2);
            assertThat(txoutboxThreads()).isNotEmpty();
            long begin = System.nanoTime();
            context.close();
            long millis = (System.nanoTime() - begin) / 1_000_000;
            assertThat(millis).as("close, ms").isLessThan(15_000);
            org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(5))
                    .untilAsserted(() -> assertThat(txoutboxThreads()).isEmpty());
        });
    }

    @Test
    void the_relay_and_the_inbox_worker_take_their_connections_from_the_beans_named_for_them_when_there_are_some() {
        CountingDataSource relayConnections = new CountingDataSource(db.dataSource());
        CountingDataSource workerConnections = new CountingDataSource(db.dataSource());
        runner.withPropertyValues("txoutbox.relay.lanes=1", "txoutbox.inbox-worker.consumer=shipping",
                        "txoutbox.inbox-worker.lanes=1")
                // as @Bean(defaultCandidate = false) declares them: Boot's own DataSource must not back off
                .withBean(TxoutboxAutoConfiguration.RELAY_DATA_SOURCE_BEAN, DataSource.class, () -> relayConnections,
                        bd -> ((AbstractBeanDefinition) bd).setDefaultCandidate(false))
                .withBean(TxoutboxAutoConfiguration.INBOX_WORKER_DATA_SOURCE_BEAN, DataSource.class,
                        () -> workerConnections, bd -> ((AbstractBeanDefinition) bd).setDefaultCandidate(false))
                .withBean(InboxHandler.class, () -> (connection, event) -> { })
                .run(context -> {
                    assertThat(context).hasNotFailed();
                    PollingRelay relay = context.getBean(RelayLifecycle.class).relay();
                    org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(20))
                            .until(() -> relay.lanes().size() == 1 && workerConnections.opened.get() > 0);
                    assertThat(relayConnections.opened).as("connections the relay took from its bean").hasPositiveValue();
                    // no pool of their own was made: Hikari names its threads "<pool> housekeeper" and so on
                    assertThat(txoutboxThreads()).noneMatch(n -> n.startsWith("txoutbox-relay ")
                            || n.startsWith("txoutbox-inbox "));
                });
    }

    /** A DataSource that counts the connections taken from it. */
    private static final class CountingDataSource extends org.springframework.jdbc.datasource.DelegatingDataSource {

        final java.util.concurrent.atomic.AtomicInteger opened = new java.util.concurrent.atomic.AtomicInteger();

        CountingDataSource(DataSource target) {
            super(target);
        }

        @Override
        public java.sql.Connection getConnection() throws java.sql.SQLException {
            opened.incrementAndGet();
            return super.getConnection();
        }
    }

    private static Set<String> txoutboxThreads() {
        return Thread.getAllStackTraces().keySet().stream().filter(Thread::isAlive).map(Thread::getName)
                .filter(n -> n.startsWith("txoutbox")).collect(Collectors.toSet());
    }

    private static <T extends Throwable> T findCause(Throwable t, Class<T> type) {
        for (Throwable c = t; c != null; c = c.getCause()) {
            if (type.isInstance(c)) {
                return type.cast(c);
            }
        }
        return null;
    }
}
