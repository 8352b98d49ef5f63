package io.txoutbox.it;

import io.txoutbox.kafka.KafkaTransport;

/** The relay acceptance suite on Kafka, one transaction per batch (the default mode). */
class KafkaTransactionalRelayIT extends KafkaRelayAcceptance {

    @Override
    KafkaTransport.Mode mode() {
        return KafkaTransport.Mode.TRANSACTIONAL;
    }
}
