package io.txoutbox.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.txoutbox.InboxHandler;
import io.txoutbox.InboxWorker;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.junit.jupiter.api.Test;

/**
 * The inbox acceptance suite in store mode: the consumer stores records into {@code inbox_event}, an
 * {@link InboxWorker} runs the handler; a poison event parks its key. Store mode's own scenario follows.
 */
class StoreModeInboxIT extends InboxAcceptanceTest {

    @Override
    Running start(Names names, String group, InboxHandler handler) {
        InboxWorker worker = InboxWorker.builder().dataSource(postgres.database().dataSource()).schema(schema)
                .consumer(names.consumer()).lanes(3).pollInterval(Duration.ofMillis(50)).handler("Seq", handler)
                .build().start();
        KafkaInboxConsumer consumer = storeMode(names, group).afterStore(worker::nudge).build().start();
        return new Running(consumer, () -> {
            consumer.close();
            worker.close();
        });
    }

    @Override
    void assertKeptAside(Names names, UUID poison) {
        assertThat(postgres.database().queryLong("SELECT count(*) FROM inbox_event WHERE consumer = '"
                + names.consumer() + "' AND event_id = '" + poison + "' AND state IN ('PARKED', 'DEAD')"))
                .as("the poison event's row is parked (the worker's default failure policy)").isEqualTo(1);
    }

    private static KafkaInboxConsumer.Builder storeMode(Names names, String group) {
        return KafkaInboxConsumer.builder().bootstrapServers(kafka.bootstrapServers()).groupId(group)
                .consumer(names.consumer()).topics(names.topic()).dataSource(postgres.database().dataSource())
                .schema(schema).storeInInbox().pollTimeout(Duration.ofMillis(100));
    }

    @Test
    void foreign_records_get_stable_derived_ids_and_rows_keep_their_source() throws Exception {
        Names names = names("foreign");
        int events = 400;
        produce(names.topic(), events, 2, null);
        // a foreign producer: no event_id header, sent once; the replay must still dedupe it
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(producerProperties())) {
            ProducerRecord<byte[], byte[]> r = new ProducerRecord<>(names.topic(),
                    "foreign".getBytes(StandardCharsets.UTF_8), "{\"seq\":1}".getBytes(StandardCharsets.UTF_8));
            r.headers().add(KafkaHeaders.EVENT_TYPE, "Seq".getBytes(StandardCharsets.UTF_8));
            producer.send(r).get();
        }
        String consumer = names.consumer();
        for (String group : List.of(consumer, consumer + "-replay")) {
            try (Running r = start(names, group, recordEffect())) {
                KafkaInboxConsumer c = r.consumer();
                await().atMost(AWAIT).until(() -> c.stats().polled() >= 2L * events + 1);
                await().atMost(AWAIT).until(() -> c.stats().batches() > 0 && postgres.database().queryLong(
                        "SELECT count(*) FROM inbox_event WHERE consumer = '" + consumer + "'") == events + 1);
                if (!group.equals(consumer)) {
                    assertThat(c.stats().stored()).as("the replay stores nothing new").isZero();
                }
                await().atMost(AWAIT).until(() -> effects(consumer) == events + 1);
            }
        }
        assertThat(distinctEffects(consumer)).isEqualTo(events + 1);
        assertThat(postgres.database().queryLong("SELECT count(*) FROM inbox_event WHERE consumer = '" + consumer
                + "' AND state = 'PROCESSED' AND source_topic = '" + names.topic()
                + "' AND source_offset IS NOT NULL")).isEqualTo(events + 1);
    }
}
