package io.txoutbox.kafka.internal;

import io.txoutbox.kafka.KafkaInboxConsumerConfig;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * The Kafka clients' properties of an inbox consumer, derived from its {@link KafkaInboxConsumerConfig}: kept here,
 * not on the public record, so the record shows settings only.
 */
public final class ConsumerClients {

    private ConsumerClients() {
    }

    /** The consumer's properties: the user's, with the ones the inbox needs (no auto-commit, read_committed, ...). */
    public static Properties consumerProperties(KafkaInboxConsumerConfig config) {
        Properties p = new Properties();
        p.putAll(config.properties());
        p.put(ConsumerConfig.GROUP_ID_CONFIG, config.groupId());
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.putIfAbsent(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        p.putIfAbsent(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.putIfAbsent(ConsumerConfig.CLIENT_ID_CONFIG, "txoutbox-inbox-" + config.name());
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        return p;
    }

    /** The dead-letter producer's properties: the user's producer ones, acks=all and idempotence. */
    public static Properties producerProperties(KafkaInboxConsumerConfig config) {
        Properties p = new Properties();
        for (Map.Entry<String, Object> e : config.properties().entrySet()) {
            if (ProducerConfig.configNames().contains(e.getKey())) {
                p.put(e.getKey(), e.getValue());
            }
        }
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
        p.put(ProducerConfig.CLIENT_ID_CONFIG, "txoutbox-inbox-dlt-" + config.name());
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        return p;
    }
}
