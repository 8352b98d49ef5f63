package io.txoutbox.spring.autoconfigure;

import io.txoutbox.InvalidConfigurationException;
import io.txoutbox.kafka.KafkaTransport;
import io.txoutbox.kafka.KafkaTransportConfig;
import io.txoutbox.spi.Transport;
import io.txoutbox.spring.internal.TxoutboxSettings;
import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.env.Environment;
import org.springframework.kafka.core.ProducerFactory;

/**
 * The relay's transport: Kafka through Spring's own Kafka settings ({@code spring.kafka.bootstrap-servers}, a service
 * connection, {@code spring.kafka.ssl.*}, {@code spring.kafka.security.*}, {@code spring.kafka.properties.*}), configured
 * once for the application's {@code KafkaTemplate} and the relay alike, with txoutbox's own {@code txoutbox.kafka.*}
 * (mode, timeouts) on top; or, with {@code txoutbox.transport=in-memory} and txoutbox-test on the classpath, an
 * {@code InMemoryTransport} bean that tests assert on. A {@link Transport} bean of the application's replaces both.
 */
@AutoConfiguration(before = TxoutboxAutoConfiguration.class,
        afterName = "org.springframework.boot.kafka.autoconfigure.KafkaAutoConfiguration")
@ConditionalOnProperty(prefix = "txoutbox", name = "enabled", havingValue = "true", matchIfMissing = true)
public class TxoutboxTransportAutoConfiguration {

    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass({KafkaTransport.class, ProducerFactory.class})
    @ConditionalOnProperty(prefix = "txoutbox", name = "transport", havingValue = "kafka", matchIfMissing = true)
    static class Kafka {

        /**
         * Spring's producer configuration (what its {@code KafkaTemplate} connects with), less what the transport
         * sets itself (serializers, {@code transactional.id}); txoutbox's safety checks apply to the rest, so an
         * unsafe override there ({@code acks=1}, ...) fails the start naming it.
         */
        @Bean(destroyMethod = "close")
        @ConditionalOnMissingBean(Transport.class)
        @ConditionalOnBean(ProducerFactory.class)
        KafkaTransport txoutboxKafkaTransport(ProducerFactory<?, ?> producers, Environment environment) {
            Map<String, Object> properties = new LinkedHashMap<>(producers.getConfigurationProperties());
            properties.remove(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG);
            properties.remove(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG);
            properties.remove(ProducerConfig.TRANSACTIONAL_ID_CONFIG);
            return new TxoutboxSettings(environment)
                    .apply(KafkaTransportConfig.DESCRIPTOR, KafkaTransport.builder().properties(properties)).build();
        }
    }

    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(name = "io.txoutbox.test.InMemoryTransport")
    @ConditionalOnProperty(prefix = "txoutbox", name = "transport", havingValue = "in-memory")
    static class InMemory {

        @Bean
        @ConditionalOnMissingBean(Transport.class)
        io.txoutbox.test.InMemoryTransport txoutboxInMemoryTransport() {
            return new io.txoutbox.test.InMemoryTransport();
        }
    }

    @Configuration(proxyBeanMethods = false)
    @ConditionalOnMissingClass("io.txoutbox.test.InMemoryTransport")
    @ConditionalOnProperty(prefix = "txoutbox", name = "transport", havingValue = "in-memory")
    static class InMemoryMissing {

        @Bean
        Transport txoutboxInMemoryTransport() {
            throw new InvalidConfigurationException("txoutbox.transport=in-memory needs io.txoutbox:txoutbox-test on "
                    + "the classpath (test scope) (setting txoutbox.transport)");
        }
    }
}
