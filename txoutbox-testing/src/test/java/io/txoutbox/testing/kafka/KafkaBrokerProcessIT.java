package io.txoutbox.testing.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.stream.IntStream;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.errors.SaslAuthenticationException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(180)
class KafkaBrokerProcessIT {

    @Test
    void dataSurvivesSigkillAndSigtermRestartsOnTheSamePorts() throws Exception {
        KafkaBrokerProcess kafka = KafkaBrokerProcess.builder().start();
        try {
            String bootstrap = kafka.bootstrapServers();
            long firstPid = kafka.pid();
            kafka.createTopic("survivor", 2);
            KafkaTestClients.produce(bootstrap, "survivor", 50);

            kafka.kill();
            assertThat(kafka.isRunning()).isFalse();
            assertThat(ProcessHandle.of(firstPid).map(ProcessHandle::isAlive).orElse(false)).isFalse();

            kafka.restart();
            assertThat(kafka.bootstrapServers()).isEqualTo(bootstrap);
            assertThat(kafka.pid()).isNotEqualTo(firstPid);
            assertThat(topics(bootstrap)).contains("survivor");
            assertValues(KafkaTestClients.readAll(bootstrap, "survivor", 50, Duration.ofSeconds(30)), 50);

            KafkaTestClients.produce(bootstrap, "survivor", 10);
            kafka.stop();
            assertThat(kafka.isRunning()).isFalse();

            kafka.restart();
            assertThat(kafka.bootstrapServers()).isEqualTo(bootstrap);
            assertThat(KafkaTestClients.readAll(bootstrap, "survivor", 60, Duration.ofSeconds(30))).hasSize(60);
            assertThat(Files.readString(kafka.logFile())).contains("Kafka Server started");
        } finally {
            // keep the broker's output for a failed run: close() deletes it
            if (Files.exists(kafka.logFile())) {
                Files.copy(kafka.logFile(), Path.of("target", "KafkaBrokerProcessIT-broker.log"),
                        StandardCopyOption.REPLACE_EXISTING);
            }
            kafka.close();
        }
        kafka.close();
        assertThat(kafka.logDir()).doesNotExist();
    }

    @Test
    void aSecureBrokerTakesTheScramUserOverTlsRefusesAWrongPasswordAndKeepsBothAcrossARestart() throws Exception {
        try (KafkaBrokerProcess kafka = KafkaBrokerProcess.builder().secure().start()) {
            String sasl = kafka.saslSslBootstrapServers();
            kafka.createTopic("secure", 2);
            KafkaTestClients.produce(sasl, scram(kafka, kafka.scramPassword()), "secure", 20);

            try (Admin admin = Admin.create(withBootstrap(scram(kafka, "not-" + kafka.scramPassword()), sasl))) {
                assertThatThrownBy(() -> admin.describeCluster().nodes().get(10, TimeUnit.SECONDS))
                        .isInstanceOf(ExecutionException.class)
                        .hasCauseInstanceOf(SaslAuthenticationException.class);
            }

            kafka.restart();
            assertThat(kafka.saslSslBootstrapServers()).isEqualTo(sasl);
            assertValues(KafkaTestClients.readAll(sasl, scram(kafka, kafka.scramPassword()), "secure", 20,
                    Duration.ofSeconds(30)), 20);
        }
    }

    /** SASL_SSL with SCRAM-SHA-512, trusting the broker's CA. */
    private static Properties scram(KafkaBrokerProcess kafka, String password) {
        Properties p = new Properties();
        p.put("security.protocol", "SASL_SSL");
        p.put("ssl.truststore.location", kafka.tls().truststore().toString());
        p.put("ssl.truststore.password", kafka.tls().storePassword());
        p.put("ssl.truststore.type", kafka.tls().storeType());
        p.put("sasl.mechanism", "SCRAM-SHA-512");
        p.put("sasl.jaas.config", "org.apache.kafka.common.security.scram.ScramLoginModule required username=\""
                + kafka.scramUser() + "\" password=\"" + password + "\";");
        return p;
    }

    private static Properties withBootstrap(Properties settings, String bootstrap) {
        Properties p = new Properties();
        p.putAll(settings);
        p.put("bootstrap.servers", bootstrap);
        return p;
    }

    private static void assertValues(List<ConsumerRecord<String, String>> records, int count) {
        assertThat(records).extracting(ConsumerRecord::value).containsExactlyInAnyOrderElementsOf(
                IntStream.range(0, count).mapToObj(i -> "value-" + i).toList());
    }

    private static java.util.Set<String> topics(String bootstrap) throws Exception {
        try (Admin admin = BrokerSetup.admin(bootstrap)) {
            return admin.listTopics().names().get(10, TimeUnit.SECONDS);
        }
    }
}
