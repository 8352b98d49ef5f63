package io.txoutbox.bench;

import io.txoutbox.kafka.KafkaTransport;
import io.txoutbox.spi.Transport;
import java.util.LinkedHashMap;
import java.util.Map;

/** The relay's transport under test: {@link KafkaTransport} with the producer settings all contenders share. */
final class KafkaTransports {

    private KafkaTransports() {
    }

    static Transport create(String bootstrapServers, Map<String, String> producerSettings, CommonOptions options) {
        KafkaTransport.Builder b = KafkaTransport.builder().bootstrapServers(bootstrapServers).mode(options.mode);
        properties(producerSettings, options).forEach(b::property);
        return b.build();
    }

    /**
     * The producer properties handed to the transport. In {@link KafkaTransport.Mode#IDEMPOTENT} the shared
     * {@code linger.ms} and {@code batch.size} are left to the transport (it flushes every batch itself and needs a
     * partition's share to fit one record batch) unless they were given with {@code --producer-property}.
     */
    static Map<String, String> properties(Map<String, String> producerSettings, CommonOptions options) {
        Map<String, String> out = new LinkedHashMap<>();
        producerSettings.forEach((k, v) -> {
            boolean transportOwns = options.mode == KafkaTransport.Mode.IDEMPOTENT
                    && (k.equals("linger.ms") || k.equals("batch.size"))
                    && !options.producerProperties.containsKey(k);
            if (!transportOwns) {
                out.put(k, v);
            }
        });
        return out;
    }
}
