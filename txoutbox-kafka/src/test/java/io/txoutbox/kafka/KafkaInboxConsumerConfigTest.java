package io.txoutbox.kafka;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.txoutbox.InvalidConfigurationException;
import org.junit.jupiter.api.Test;

/** The inbox consumer's configuration, without a broker or a database. */
class KafkaInboxConsumerConfigTest {

    @Test
    void aNullSchemaIsRefusedAtTheCallWithTheMessageOfEveryBuilder() {
        assertThatThrownBy(() -> KafkaInboxConsumer.builder().schema(null))
                .isInstanceOf(InvalidConfigurationException.class)
                .hasMessage("kafkaInbox.schema must not be null: pass OutboxSchema.defaults() or "
                        + "OutboxSchema.builder()...build() (settings txoutbox.schema.*)");
    }
}
