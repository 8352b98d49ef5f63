package io.txoutbox.spring.autoconfigure;

import io.micrometer.core.instrument.MeterRegistry;
import io.txoutbox.micrometer.MicrometerRelayListener;
import io.txoutbox.micrometer.OutboxMeterBinder;
import io.txoutbox.spi.RelayListener;
import io.txoutbox.spring.autoconfigure.TxoutboxAutoConfiguration.TxoutboxSchema;
import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.context.annotation.Bean;

/**
 * Micrometer, when the application has a {@link MeterRegistry}: the relay's meters ({@code txoutbox.relay.*}, through
 * its listener) and the outbox gauges ({@code txoutbox.outbox.pending}, {@code txoutbox.outbox.event.age}, parked
 * keys, dead events), sampled every 5 s on a thread of their own, never on the scrape.
 */
@AutoConfiguration(after = TxoutboxAutoConfiguration.class,
        afterName = "org.springframework.boot.micrometer.metrics.autoconfigure.CompositeMeterRegistryAutoConfiguration")
@ConditionalOnClass({MeterRegistry.class, OutboxMeterBinder.class})
@ConditionalOnBean({MeterRegistry.class, TxoutboxSchema.class})
public class TxoutboxMetricsAutoConfiguration {

    @Bean
    @ConditionalOnMissingBean(RelayListener.class)
    RelayListener txoutboxRelayMetrics(MeterRegistry registry) {
        return new MicrometerRelayListener(registry);
    }

    @Bean
    OutboxMeterBinder txoutboxOutboxGauges(TxoutboxSchema schema, ListableBeanFactory beans) {
        return new OutboxMeterBinder(TxoutboxAutoConfiguration.outboxDataSource(beans), schema.schema());
    }
}
