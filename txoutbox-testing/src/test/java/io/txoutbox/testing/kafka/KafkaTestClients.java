package io.txoutbox.testing.kafka;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/** Plain clients for the broker tests. */
final class KafkaTestClients {

    private KafkaTestClients() {
    }

    static KafkaProducer<String, String> producer(String bootstrapServers) {
        return producer(bootstrapServers, new Properties());
    }

    /** With client settings added, e.g. security. */
    static KafkaProducer<String, String> producer(String bootstrapServers, Properties settings) {
        Properties p = new Properties();
        p.putAll(settings);
        p.put("bootstrap.servers", bootstrapServers);
        p.put("acks", "all");
        p.put("enable.idempotence", "true");
        p.put("delivery.timeout.ms", "30000");
        p.put("request.timeout.ms", "10000");
        return new KafkaProducer<>(p, new StringSerializer(), new StringSerializer());
    }

    /** Sends {@code count} records {@code key-i/value-i} and waits for every ack. */
    static void produce(String bootstrapServers, String topic, int count) throws Exception {
        produce(bootstrapServers, new Properties(), topic, count);
    }

    static void produce(String bootstrapServers, Properties settings, String topic, int count) throws Exception {
        try (KafkaProducer<String, String> producer = producer(bootstrapServers, settings)) {
            List<java.util.concurrent.Future<?>> acks = new ArrayList<>();
            for (int i = 0; i < count; i++) {
                acks.add(producer.send(new ProducerRecord<>(topic, "key-" + i, "value-" + i)));
            }
            for (java.util.concurrent.Future<?> ack : acks) {
                ack.get(30, TimeUnit.SECONDS);
            }
        }
    }

    /** Reads all partitions of {@code topic} from the beginning until {@code expected} records or the timeout. */
    static List<ConsumerRecord<String, String>> readAll(String bootstrapServers, String topic, int expected,
                                                        Duration timeout) {
        return readAll(bootstrapServers, new Properties(), topic, expected, timeout);
    }

    static List<ConsumerRecord<String, String>> readAll(String bootstrapServers, Properties settings, String topic,
                                                        int expected, Duration timeout) {
        Properties p = new Properties();
        p.putAll(settings);
        p.put("bootstrap.servers", bootstrapServers);
        p.put("enable.auto.commit", "false");
        p.put("auto.offset.reset", "earliest");
        p.put("isolation.level", "read_committed");
        List<ConsumerRecord<String, String>> records = new ArrayList<>();
        try (KafkaConsumer<String, String> consumer =
                     new KafkaConsumer<>(p, new StringDeserializer(), new StringDeserializer())) {
            List<TopicPartition> partitions = consumer.partitionsFor(topic, Duration.ofSeconds(20)).stream()
                    .map(i -> new TopicPartition(topic, i.partition())).toList();
            consumer.assign(partitions);
            consumer.seekToBeginning(partitions);
            long deadline = System.nanoTime() + timeout.toNanos();
            while (records.size() < expected && System.nanoTime() < deadline) {
                consumer.poll(Duration.ofMillis(200)).forEach(records::add);
            }
        }
        return records;
    }
}
