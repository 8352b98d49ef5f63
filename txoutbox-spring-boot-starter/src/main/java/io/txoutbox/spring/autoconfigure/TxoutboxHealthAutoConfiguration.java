package io.txoutbox.spring.autoconfigure;

import io.txoutbox.HealthConfig;
import io.txoutbox.OutboxHealth;
import io.txoutbox.spring.autoconfigure.TxoutboxAutoConfiguration.TxoutboxSchema;
import io.txoutbox.spring.internal.OutboxHealthIndicators;
import io.txoutbox.spring.internal.RelayLifecycle;
import io.txoutbox.spring.internal.TxoutboxSettings;
import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.health.autoconfigure.contributor.ConditionalOnEnabledHealthIndicator;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.context.annotation.Bean;

/**
 * Actuator health: {@code txoutbox} is UP while the outbox can be read — also on a standby instance that owns no lane
 * (an orchestrator must not restart standbys) — with the outbox check's verdict, its reasons, the backlog and the lane
 * coverage as details. {@code txoutboxReadiness} (opt-in, {@code management.health.txoutbox-readiness.enabled=true})
 * is DOWN while that check fails, for a readiness group ({@code
 * management.endpoint.health.group.readiness.include=readinessState,txoutboxReadiness}); never put it in liveness.
 */
@AutoConfiguration(after = TxoutboxAutoConfiguration.class)
@ConditionalOnClass(HealthIndicator.class)
@ConditionalOnBean(TxoutboxSchema.class)
public class TxoutboxHealthAutoConfiguration {

    @Bean
    @ConditionalOnEnabledHealthIndicator("txoutbox")
    HealthIndicator txoutboxHealthIndicator(OutboxHealthIndicators indicators) {
        return indicators.status();
    }

    @Bean
    @ConditionalOnProperty(prefix = "management.health.txoutbox-readiness", name = "enabled", havingValue = "true")
    HealthIndicator txoutboxReadinessHealthIndicator(OutboxHealthIndicators indicators) {
        return indicators.readiness();
    }

    @Bean
    OutboxHealthIndicators txoutboxHealthIndicators(TxoutboxSchema schema, ListableBeanFactory beans,
            ObjectProvider<RelayLifecycle> relay, TxoutboxSettings settings) {
        OutboxHealth.Builder health = settings.apply(HealthConfig.DESCRIPTOR, OutboxHealth.builder())
                .dataSource(TxoutboxAutoConfiguration.outboxDataSource(beans)).schema(schema.schema());
        RelayLifecycle lifecycle = relay.getIfAvailable();
        if (lifecycle != null) {
            health.relay(lifecycle.relay());
        }
        return new OutboxHealthIndicators(health.build(), TxoutboxAutoConfiguration.outboxDataSource(beans),
                schema.schema(), lifecycle == null ? null : lifecycle.relay());
    }
}
