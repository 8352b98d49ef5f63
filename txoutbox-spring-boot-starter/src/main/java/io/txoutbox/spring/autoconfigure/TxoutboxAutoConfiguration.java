package io.txoutbox.spring.autoconfigure;

import com.zaxxer.hikari.HikariDataSource;
import io.txoutbox.Inbox;
import io.txoutbox.InboxHandler;
import io.txoutbox.InboxWorker;
import io.txoutbox.InboxWorkerConfig;
import io.txoutbox.InvalidConfigurationException;
import io.txoutbox.Outbox;
import io.txoutbox.OutboxConfig;
import io.txoutbox.OutboxSchema;
import io.txoutbox.PollingRelay;
import io.txoutbox.RelayConfig;
import io.txoutbox.spi.InboxListener;
import io.txoutbox.spi.PayloadSerializer;
import io.txoutbox.spi.RelayListener;
import io.txoutbox.spi.Transport;
import io.txoutbox.spring.OutboxEventPublisher;
import io.txoutbox.spring.TransactionalInbox;
import io.txoutbox.spring.internal.ComponentPool;
import io.txoutbox.spring.internal.InboxWorkerLifecycle;
import io.txoutbox.spring.internal.RelayLifecycle;
import io.txoutbox.spring.internal.SchemaInitializer;
import io.txoutbox.spring.internal.Serializers;
import io.txoutbox.spring.internal.SpringOutboxEventPublisher;
import io.txoutbox.spring.internal.SpringTransactionalInbox;
import io.txoutbox.spring.internal.StarterSettings;
import io.txoutbox.spring.internal.TraceHeaders;
import io.txoutbox.spring.internal.TxoutboxSettings;
import java.util.function.BiFunction;
import javax.sql.DataSource;
import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.jdbc.autoconfigure.JdbcConnectionDetails;
import org.springframework.boot.sql.init.dependency.DependsOnDatabaseInitialization;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.env.Environment;
import org.springframework.util.ClassUtils;

/**
 * txoutbox in a Spring Boot application: the outbox schema (migrated or checked at start), an
 * {@link OutboxEventPublisher} that joins the current transaction, the {@link Inbox}, and the relay as a lifecycle
 * bean with its own small pool. Every setting is a {@code txoutbox.*} property named by core's descriptors
 * (docs/configuration.md); the starter's own are in {@link StarterSettings}.
 *
 * <p><b>Which DataSource.</b> A bean named {@code txoutboxDataSource} when there is one, else the application's
 * primary {@code DataSource}: the one its {@code @Transactional} methods run on, so the events commit with the
 * business rows. The relay connects with the same URL and credentials through a fixed pool of its own
 * ({@code txoutbox-relay}: lanes + 2 connections, + 1 with {@code listen-notify}), or through a bean named
 * {@code txoutboxRelayDataSource}; the inbox worker likewise ({@code txoutbox-inbox}: lanes + 2, or a bean named
 * {@code txoutboxInboxWorkerDataSource}).
 */
@AutoConfiguration(after = DataSourceAutoConfiguration.class,
        afterName = {"org.springframework.boot.flyway.autoconfigure.FlywayAutoConfiguration",
                "org.springframework.boot.liquibase.autoconfigure.LiquibaseAutoConfiguration",
                "org.springframework.boot.kafka.autoconfigure.KafkaAutoConfiguration",
                "org.springframework.boot.jackson.autoconfigure.JacksonAutoConfiguration",
                "org.springframework.boot.micrometer.metrics.autoconfigure.CompositeMeterRegistryAutoConfiguration"})
@ConditionalOnClass(Outbox.class)
@ConditionalOnBean(DataSource.class)
@ConditionalOnProperty(prefix = "txoutbox", name = "enabled", havingValue = "true", matchIfMissing = true)
public class TxoutboxAutoConfiguration {

    /** The bean name that picks the outbox's DataSource among several. */
    public static final String DATA_SOURCE_BEAN = "txoutboxDataSource";
    /** The bean name of a DataSource the relay uses instead of its own pool. */
    public static final String RELAY_DATA_SOURCE_BEAN = "txoutboxRelayDataSource";
    /** The bean name of a DataSource the inbox worker uses instead of its own pool. */
    public static final String INBOX_WORKER_DATA_SOURCE_BEAN = "txoutboxInboxWorkerDataSource";

    @Bean
    @ConditionalOnMissingBean
    TxoutboxSettings txoutboxSettings(Environment environment) {
        return new TxoutboxSettings(environment);
    }

    @Bean
    @ConditionalOnMissingBean
    OutboxSchema outboxSchema(TxoutboxSettings settings) {
        return settings.apply(OutboxSchema.DESCRIPTOR, OutboxSchema.builder()).build();
    }

    /** Applies or checks the schema once the application's own database initialization (Flyway, Liquibase) ran. */
    @Bean
    @DependsOnDatabaseInitialization
    TxoutboxSchema txoutboxSchema(OutboxSchema schema, ListableBeanFactory beans, TxoutboxSettings settings) {
        SchemaInitializer initializer = new SchemaInitializer(schema, outboxDataSource(beans),
                StarterSettings.MIGRATE.read(settings), migrationTool(beans));
        initializer.initialize();
        return new TxoutboxSchema(schema);
    }

    /** The marker that the outbox schema was migrated or checked: everything that uses the tables depends on it. */
    public record TxoutboxSchema(OutboxSchema schema) {
    }

    @Bean
    @ConditionalOnMissingBean
    Outbox outbox(TxoutboxSettings settings, TxoutboxSchema schema, ObjectProvider<PayloadSerializer> serializer,
            ListableBeanFactory beans) {
        PayloadSerializer json = serializer.getIfAvailable(() -> Serializers.json(beans));
        return settings.apply(OutboxConfig.DESCRIPTOR, Outbox.builder()).schema(schema.schema())
                .payloadSerializer(json).build();
    }

    @Bean
    @ConditionalOnMissingBean
    OutboxEventPublisher outboxEventPublisher(ListableBeanFactory beans, Outbox outbox,
            ObjectProvider<RelayLifecycle> relay, ObjectProvider<TraceHeaders> trace) {
        RelayLifecycle lifecycle = relay.getIfAvailable();
        return new SpringOutboxEventPublisher(outboxDataSource(beans), outbox,
                lifecycle == null ? null : (java.util.function.IntConsumer) lifecycle::nudge, trace.getIfAvailable());
    }

    @Bean
    @ConditionalOnMissingBean
    Inbox inbox(TxoutboxSchema schema) {
        return Inbox.create(schema.schema());
    }

    @Bean
    @ConditionalOnMissingBean
    TransactionalInbox transactionalInbox(ListableBeanFactory beans, Inbox inbox,
            ObjectProvider<InboxWorkerLifecycle> worker) {
        InboxWorkerLifecycle lifecycle = worker.getIfAvailable();
        return new SpringTransactionalInbox(outboxDataSource(beans), inbox,
                lifecycle == null ? null : lifecycle::nudge);
    }

    /**
     * The durable inbox's worker, when {@code txoutbox.inbox-worker.consumer} names the consumer whose rows it
     * processes: the application's {@link InboxHandler} bean applies each event, in the worker's transaction, in order
     * per key, with retries, parking or dead letters ({@code txoutbox.inbox-worker.*}). Its own pool, like the relay.
     */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnProperty(prefix = "txoutbox.inbox-worker", name = "consumer")
    static class InboxWorkerConfiguration {

        @Bean
        @ConditionalOnMissingBean
        InboxWorkerLifecycle txoutboxInboxWorker(TxoutboxSettings settings, TxoutboxSchema schema,
                ObjectProvider<InboxHandler> handler, ObjectProvider<InboxListener> listener,
                ObjectProvider<JdbcConnectionDetails> connection, ListableBeanFactory beans) {
            InboxHandler h = handler.getIfUnique();
            if (h == null) {
                throw new InvalidConfigurationException("txoutbox.inbox-worker.consumer is set but the application "
                        + "has " + (handler.stream().count() == 0 ? "no" : "more than one") + " InboxHandler bean: "
                        + "define exactly one (dispatch on event.eventType() inside it), or build the InboxWorker "
                        + "yourself (setting txoutbox.inbox-worker.consumer)");
            }
            InboxWorker.Builder builder = settings.apply(InboxWorkerConfig.DESCRIPTOR, InboxWorker.builder())
                    .schema(schema.schema()).defaultHandler(h);
            listener.ifUnique(builder::listener);
            return onOwnConnections(beans, INBOX_WORKER_DATA_SOURCE_BEAN, "txoutbox-inbox",
                    builder.config().lanes() + 2, connection.getIfAvailable(),
                    (dataSource, pool) -> new InboxWorkerLifecycle(builder.dataSource(dataSource).build(), pool));
        }
    }

    /** The relay, unless {@code txoutbox.relay.enabled=false} (a service that only writes; a relay runs elsewhere). */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnProperty(prefix = "txoutbox.relay", name = "enabled", havingValue = "true", matchIfMissing = true)
    static class RelayConfiguration {

        @Bean
        @ConditionalOnMissingBean
        RelayLifecycle txoutboxRelay(TxoutboxSettings settings, TxoutboxSchema schema,
                ObjectProvider<Transport> transport, ObjectProvider<RelayListener> listener,
                ObjectProvider<JdbcConnectionDetails> connection, ListableBeanFactory beans) {
            PollingRelay.Builder builder = settings.apply(RelayConfig.DESCRIPTOR, PollingRelay.builder())
                    .schema(schema.schema());
            Transport t = transport.getIfUnique();
            if (t == null) {
                throw new InvalidConfigurationException("txoutbox.relay.enabled is true but there is no transport for "
                        + "the relay: add spring-kafka and spring.kafka.bootstrap-servers, define a "
                        + "io.txoutbox.spi.Transport bean, set txoutbox.transport=in-memory in tests, or set "
                        + "txoutbox.relay.enabled=false when a relay runs elsewhere (setting txoutbox.relay.enabled)");
            }
            builder.transport(t);
            listener.ifUnique(builder::listener);
            RelayConfig config = builder.config();
            return onOwnConnections(beans, RELAY_DATA_SOURCE_BEAN, "txoutbox-relay",
                    ComponentPool.relaySize(Math.min(config.lanes(), config.maxLanesPerInstance()),
                            config.listenNotify()), connection.getIfAvailable(),
                    (dataSource, pool) -> new RelayLifecycle(builder.dataSource(dataSource).build(), pool));
        }
    }

    /**
     * A component that holds a session per lane (the relay, the inbox worker), on the {@code DataSource} bean named
     * {@code bean} if the application defines one (the application then owns it), else on a pool of its own named
     * {@code poolName} with {@code size} connections, which its lifecycle closes after it.
     */
    private static <T> T onOwnConnections(ListableBeanFactory beans, String bean, String poolName, int size,
            JdbcConnectionDetails connection, BiFunction<DataSource, AutoCloseable, T> component) {
        if (beans.containsBean(bean)) {
            return component.apply(beans.getBean(bean, DataSource.class), null);
        }
        HikariDataSource pool = ComponentPool.of(poolName, connection, outboxDataSource(beans), size);
        return ComponentPool.build(pool, p -> component.apply(p, p));
    }

    static DataSource outboxDataSource(ListableBeanFactory beans) {
        if (beans.containsBean(DATA_SOURCE_BEAN)) {
            return beans.getBean(DATA_SOURCE_BEAN, DataSource.class);
        }
        return beans.getBean(DataSource.class);
    }

    private static String migrationTool(ListableBeanFactory beans) {
        if (present(beans, "org.flywaydb.core.Flyway")) {
            return "Flyway";
        }
        if (present(beans, "liquibase.integration.spring.SpringLiquibase")) {
            return "Liquibase";
        }
        return null;
    }

    private static boolean present(ListableBeanFactory beans, String type) {
        ClassLoader loader = TxoutboxAutoConfiguration.class.getClassLoader();
        return ClassUtils.isPresent(type, loader)
                && beans.getBeanNamesForType(ClassUtils.resolveClassName(type, loader), true, false).length > 0;
    }
}
