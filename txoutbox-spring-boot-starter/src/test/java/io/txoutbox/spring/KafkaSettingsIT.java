package io.txoutbox.spring;

import static org.assertj.core.api.Assertions.assertThat;

import io.txoutbox.InvalidConfigurationException;
import io.txoutbox.kafka.KafkaTransport;
import io.txoutbox.spi.Transport;
import io.txoutbox.spring.autoconfigure.TxoutboxAutoConfiguration;
import io.txoutbox.spring.autoconfigure.TxoutboxTransportAutoConfiguration;
import io.txoutbox.testing.postgres.TestDatabase;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.jdbc.autoconfigure.DataSourceTransactionManagerAutoConfiguration;
import org.springframework.boot.kafka.autoconfigure.KafkaAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

/**
 * Kafka configured once: Spring's {@code spring.kafka.*} (bootstrap servers, security, client properties) reaches the
 * relay's transport, txoutbox's own {@code txoutbox.kafka.*} applies on top, and an unsafe producer setting fails the
 * start naming it. No broker is contacted: producers are made on a lane's first send.
 */
class KafkaSettingsIT {

    private static final TestDatabase db = StarterDatabase.create("kafka_settings");

    private final ApplicationContextRunner runner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(DataSourceAutoConfiguration.class,
                    DataSourceTransactionManagerAutoConfiguration.class, KafkaAutoConfiguration.class,
                    TxoutboxTransportAutoConfiguration.class, TxoutboxAutoConfiguration.class))
            .withPropertyValues(StarterDatabase.properties(db))
            .withPropertyValues("txoutbox.relay.enabled=false", "spring.kafka.bootstrap-servers=127.0.0.1:9",
                    "spring.kafka.security.protocol=SASL_PLAINTEXT",
                    "spring.kafka.properties.sasl.mechanism=PLAIN",
                    "spring.kafka.properties.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule"
                            + " required username=\"relay\" password=\"s3cret\";");

    @Test
    void spring_kafka_settings_reach_the_relays_transport_and_txoutbox_kafka_applies_on_top() {
        runner.withPropertyValues("txoutbox.kafka.mode=idempotent").run(context -> {
            assertThat(context).hasNotFailed();
            KafkaTransport transport = (KafkaTransport) context.getBean(Transport.class);
            Map<String, Object> producer = transport.config().producerProperties();
            assertThat(producer).containsEntry("security.protocol", "SASL_PLAINTEXT")
                    .containsEntry("sasl.mechanism", "PLAIN").containsKey("sasl.jaas.config")
                    .doesNotContainKey("transactional.id");
            assertThat(String.valueOf(producer.get("bootstrap.servers"))).contains("127.0.0.1:9");
            assertThat(producer.get("key.serializer")).isNotEqualTo(
                    "org.apache.kafka.common.serialization.StringSerializer");
            assertThat(transport.config().mode()).isEqualTo(KafkaTransport.Mode.IDEMPOTENT);
        });
    }

    @Test
    void an_unsafe_producer_setting_in_spring_kafka_fails_the_start_naming_it() {
        runner.withPropertyValues("spring.kafka.producer.acks=1").run(context -> {
            assertThat(context).hasFailed();
            Throwable cause = context.getStartupFailure();
            while (cause != null && !(cause instanceof InvalidConfigurationException)) {
                cause = cause.getCause();
            }
            assertThat(cause).as("cause of %s", context.getStartupFailure()).isNotNull();
            assertThat(cause.getMessage()).contains("acks");
        });
    }
}
