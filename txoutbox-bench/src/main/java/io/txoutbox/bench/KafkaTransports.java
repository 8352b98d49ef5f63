package io.txoutbox.bench;

import io.txoutbox.kafka.KafkaTransport;
import io.txoutbox.spi.Transport;
import java.util.Map;

/** The relay's transport under test: {@link KafkaTransport} with the producer settings all contenders share. */
final class KafkaTransports {

    private KafkaTransports() {
    }

    /**
     * In {@link KafkaTransport.Mode#IDEMPOTENT} the shared {@code linger.ms} and {@code batch.size} are left to the
     * transport (it flushes every batch itself and needs a partition's share to fit one record batch) unless they
     * were given with {@code --producer-property}.
     */
    static Transport create(String bootstrapServers, Map<String, String> producerSettings, CommonOptions options) {
        KafkaTransport.Builder b = KafkaTransport.builder().bootstrapServers(bootstrapServers).mode(options.mode);
        producerSettings.forEach((k, v) -> {
            boolean transportOwns = options.mode == KafkaTransport.Mode.IDEMPOTENT
                    && (k.equals("linger.ms") || k.equals("batch.size"))
                    && !options.producerProperties.containsKey(k);
            if (!transportOwns) {
                b.property(k, v);
            }
        });
        return b.build();
    }
}
