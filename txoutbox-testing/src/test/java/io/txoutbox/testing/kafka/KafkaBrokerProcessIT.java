package io.txoutbox.testing.kafka;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.IntStream;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.ConsumerRecord;
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
