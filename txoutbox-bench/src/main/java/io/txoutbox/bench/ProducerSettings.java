package io.txoutbox.bench;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * The producer settings every contender uses: the Kafka transport's defaults (acks=all, idempotence, linger.ms=5,
 * batch.size=128 KiB, lz4), plus any {@code --producer-property} (also handed to the transport).
 */
final class ProducerSettings {

    private ProducerSettings() {
    }

    static Map<String, String> defaults() {
        Map<String, String> m = new LinkedHashMap<>();
        m.put(ProducerConfig.ACKS_CONFIG, "all");
        m.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
        m.put(ProducerConfig.LINGER_MS_CONFIG, "5");
        m.put(ProducerConfig.BATCH_SIZE_CONFIG, "131072");
        m.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, "lz4");
        return m;
    }

    static Map<String, String> effective(CommonOptions options) {
        Map<String, String> m = defaults();
        m.putAll(options.producerProperties);
        return m;
    }

    static KafkaProducer<byte[], byte[]> producer(String bootstrap, Map<String, String> settings, String clientId) {
        Properties p = new Properties();
        p.putAll(settings);
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.CLIENT_ID_CONFIG, clientId);
        return new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer());
    }
}
