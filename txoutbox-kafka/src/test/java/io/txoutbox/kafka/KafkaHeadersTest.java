package io.txoutbox.kafka;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.junit.jupiter.api.Test;

class KafkaHeadersTest {

    @Test
    void the_dead_letter_header_names_are_the_documented_ones() {
        // readers of dead-letter topics match these names: they are a wire format
        assertThat(List.of(KafkaHeaders.DLT_REASON, KafkaHeaders.DLT_EXCEPTION, KafkaHeaders.DLT_ORIGINAL_TOPIC,
                KafkaHeaders.DLT_ORIGINAL_PARTITION, KafkaHeaders.DLT_ORIGINAL_OFFSET, KafkaHeaders.DLT_ATTEMPTS,
                KafkaHeaders.DLT_CONSUMER)).containsExactly("dlt-reason", "dlt-exception", "dlt-original-topic",
                "dlt-original-partition", "dlt-original-offset", "dlt-attempts", "dlt-consumer");
    }
}
