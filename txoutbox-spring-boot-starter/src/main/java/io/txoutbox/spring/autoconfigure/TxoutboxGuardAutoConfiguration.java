package io.txoutbox.spring.autoconfigure;

import io.txoutbox.spring.internal.KafkaTemplateGuard;
import io.txoutbox.spring.internal.TxoutboxSettings;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.context.annotation.Bean;
import org.springframework.core.env.Environment;
import org.springframework.kafka.core.KafkaTemplate;

/**
 * The guard against the dual write, {@code txoutbox.guard.kafka-template} = {@code off} (default), {@code warn} or
 * {@code fail}: a {@code KafkaTemplate} send inside a database transaction, or from its after-commit callbacks (a
 * {@code @TransactionalEventListener(phase = AFTER_COMMIT)} listener), is logged or refused with a message that points
 * to {@code OutboxEventPublisher.publish} ({@link KafkaTemplateGuard}). The setting is read and checked at start in
 * every mode, so a misspelt value fails the start naming it.
 */
@AutoConfiguration(afterName = "org.springframework.boot.kafka.autoconfigure.KafkaAutoConfiguration")
@ConditionalOnClass(KafkaTemplate.class)
@ConditionalOnProperty(prefix = "txoutbox", name = "enabled", havingValue = "true", matchIfMissing = true)
public class TxoutboxGuardAutoConfiguration {

    /** Static: a bean post-processor, created before the beans it processes (the application's KafkaTemplates). */
    @Bean
    @ConditionalOnMissingBean
    static KafkaTemplateGuard txoutboxKafkaTemplateGuard(Environment environment) {
        return new KafkaTemplateGuard(KafkaTemplateGuard.Mode.of(new TxoutboxSettings(environment)));
    }
}
