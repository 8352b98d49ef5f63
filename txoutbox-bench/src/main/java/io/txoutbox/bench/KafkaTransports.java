package io.txoutbox.bench;

import io.txoutbox.kafka.KafkaTransport;
import io.txoutbox.spi.Transport;
import java.util.Map;

/** The relay's transport under test: {@link KafkaTransport} with the producer settings all contenders share. */
final class KafkaTransports {

    private KafkaTransports() {
    }

    static Transport create(String bootstrapServers, Map<String, String> producerSettings) {
        KafkaTransport.Builder b = KafkaTransport.builder().bootstrapServers(bootstrapServers);
        producerSettings.forEach(b::property);
        return b.build();
    }
}
