package io.txoutbox.it;

import io.txoutbox.OutboxSchema;
import io.txoutbox.kafka.KafkaTransport;

/**
 * The relay acceptance suite on Kafka with the idempotent producer, on tables with {@code schema.progress=CURSOR}
 * (docs/progress-models.md): a lane records how far it delivered by a cursor, not row by row.
 */
class KafkaCursorProgressRelayIT extends KafkaRelayAcceptance {

    @Override
    KafkaTransport.Mode mode() {
        return KafkaTransport.Mode.IDEMPOTENT;
    }

    @Override
    protected OutboxSchema.Progress progress() {
        return OutboxSchema.Progress.CURSOR;
    }
}
