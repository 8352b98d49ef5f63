package io.txoutbox.it;

import io.txoutbox.kafka.KafkaTransport;

/** The relay acceptance suite on Kafka with the idempotent producer, no transactions. */
class KafkaIdempotentRelayIT extends KafkaRelayAcceptance {

    @Override
    KafkaTransport.Mode mode() {
        return KafkaTransport.Mode.IDEMPOTENT;
    }
}
