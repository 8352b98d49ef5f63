package io.txoutbox.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.txoutbox.OutboxException;
import java.nio.charset.StandardCharsets;
import java.util.UUID;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.api.Test;

class KafkaInboxConsumerEventIdsTest {

    private static final UUID RELAY_ID = UUID.fromString("0193a1b2-7c3d-7e4f-8a5b-6c7d8e9f0a1b");

    @Test
    void the_id_derived_from_coordinates_is_the_same_in_every_release() {
        // stored in inbox rows as the dedupe key: a change would let every redelivered foreign record in again
        assertThat(KafkaInboxConsumer.eventIdFromCoordinates(record("orders", 2, 41)))
                .isEqualTo(UUID.fromString("d7185b1e-98dd-3f04-9d4b-ab9a7bd78a71"))
                .isEqualTo(UUID.nameUUIDFromBytes("orders/2/41".getBytes(StandardCharsets.UTF_8)));
    }

    @Test
    void the_default_takes_the_header_and_derives_an_id_only_without_one() {
        ConsumerRecord<byte[], byte[]> withHeader = record("orders", 2, 41);
        withHeader.headers().add(KafkaHeaders.EVENT_ID, RELAY_ID.toString().getBytes(StandardCharsets.UTF_8));
        assertThat(KafkaInboxConsumer.eventIdFromHeaderOrCoordinates().apply(withHeader)).isEqualTo(RELAY_ID);
        assertThat(KafkaInboxConsumer.eventIdFromHeaderOrCoordinates().apply(record("orders", 2, 41)))
                .isEqualTo(UUID.fromString("d7185b1e-98dd-3f04-9d4b-ab9a7bd78a71"));
    }

    @Test
    void from_header_refuses_a_record_without_the_header_or_with_a_non_uuid() {
        ConsumerRecord<byte[], byte[]> withHeader = record("orders", 0, 7);
        withHeader.headers().add(KafkaHeaders.EVENT_ID, RELAY_ID.toString().getBytes(StandardCharsets.UTF_8));
        assertThat(KafkaInboxConsumer.eventIdFromHeader().apply(withHeader)).isEqualTo(RELAY_ID);
        assertThatThrownBy(() -> KafkaInboxConsumer.eventIdFromHeader().apply(record("orders", 0, 7)))
                .isInstanceOf(OutboxException.class)
                .hasMessage("record orders-0@7 has no 'event_id' header; configure eventIds(...) for foreign "
                        + "producers");
        ConsumerRecord<byte[], byte[]> notUuid = record("orders", 0, 8);
        notUuid.headers().add(KafkaHeaders.EVENT_ID, "42".getBytes(StandardCharsets.UTF_8));
        assertThatThrownBy(() -> KafkaInboxConsumer.eventIdFromHeaderOrCoordinates().apply(notUuid))
                .isInstanceOf(OutboxException.class)
                .hasMessage("record orders-0@8 has an 'event_id' header that is not a UUID");
    }

    private static ConsumerRecord<byte[], byte[]> record(String topic, int partition, long offset) {
        return new ConsumerRecord<>(topic, partition, offset, null, "{}".getBytes(StandardCharsets.UTF_8));
    }
}
