package io.txoutbox.testing.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.stream.IntStream;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.errors.RecordTooLargeException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(120)
class KafkaBrokerIT {

    @Test
    void producesAndConsumesHundredRecords() throws Exception {
        KafkaBroker kafka = KafkaBroker.shared();
        kafka.createTopic("hundred", 3);

        KafkaTestClients.produce(kafka.bootstrapServers(), "hundred", 100);
        List<ConsumerRecord<String, String>> records =
                KafkaTestClients.readAll(kafka.bootstrapServers(), "hundred", 100, Duration.ofSeconds(30));

        assertThat(records).hasSize(100);
        assertThat(records).extracting(ConsumerRecord::value).containsExactlyInAnyOrderElementsOf(
                IntStream.range(0, 100).mapToObj(i -> "value-" + i).toList());
        assertThat(records).extracting(ConsumerRecord::partition).containsOnly(0, 1, 2);
    }

    @Test
    void sharedIsOneBrokerThatCloseDoesNotStop() throws Exception {
        KafkaBroker first = KafkaBroker.shared();
        first.close();

        assertThat(KafkaBroker.shared()).isSameAs(first);
        first.createTopic("after-close", 1);
        try (Admin admin = BrokerSetup.admin(first.bootstrapServers())) {
            assertThat(admin.listTopics().names().get(10, TimeUnit.SECONDS)).contains("after-close");
        }
    }

    @Test
    void builderOverridesBrokerPropertiesAndCloseDeletesTheLogDir() throws Exception {
        KafkaBroker kafka = KafkaBroker.builder().property("message.max.bytes", "2000")
                .property("auto.create.topics.enable", "false").numPartitions(2).start();
        try {
            assertThat(kafka.bootstrapServers()).isNotEqualTo(KafkaBroker.shared().bootstrapServers());
            kafka.createTopic("small", 1);
            try (KafkaProducer<String, String> producer = KafkaTestClients.producer(kafka.bootstrapServers())) {
                producer.send(new ProducerRecord<>("small", "k", "fits")).get(30, TimeUnit.SECONDS);
                assertThatThrownBy(() -> producer.send(new ProducerRecord<>("small", "k", "x".repeat(10_000)))
                        .get(30, TimeUnit.SECONDS))
                        .isInstanceOf(ExecutionException.class)
                        .hasCauseInstanceOf(RecordTooLargeException.class);
            }
            try (Admin admin = BrokerSetup.admin(kafka.bootstrapServers())) {
                assertThat(admin.listTopics().names().get(10, TimeUnit.SECONDS)).isEqualTo(Set.of("small"));
            }
        } finally {
            kafka.close();
        }
        kafka.close();

        assertThat(kafka.logDir()).doesNotExist();
    }
}
