package io.txoutbox.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.txoutbox.InboxEvent;
import io.txoutbox.InboxHandler;
import io.txoutbox.OutboxException;
import io.txoutbox.RetryPolicy;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.api.Test;

/**
 * The inbox acceptance suite in handle mode: the consumer runs the handler itself, deduplicated by event id in its
 * database transaction; a poison event goes to the dead-letter topic. Handle mode's own scenario follows.
 */
class HandleModeInboxIT extends InboxAcceptanceTest {

    private static final RetryPolicy FAST = RetryPolicy.defaults().withMaxAttempts(4)
            .withBackoff(Duration.ofMillis(50), Duration.ofMillis(200));

    @Override
    Running start(Names names, String group, InboxHandler handler) {
        KafkaInboxConsumer consumer = handleMode(names, group, handler).build().start();
        return new Running(consumer, consumer::close);
    }

    @Override
    void assertKeptAside(Names names, UUID poison) {
        List<ConsumerRecord<byte[], byte[]>> dead = readAll(names.deadLetterTopic(), 1);
        assertThat(dead).hasSize(1);
        assertThat(header(dead.get(0), KafkaHeaders.EVENT_ID)).isEqualTo(poison.toString());
        assertThat(header(dead.get(0), KafkaHeaders.DLT_REASON)).contains("rule violated");
    }

    private static KafkaInboxConsumer.Builder handleMode(Names names, String group, InboxHandler handler) {
        return KafkaInboxConsumer.builder().bootstrapServers(kafka.bootstrapServers()).groupId(group)
                .consumer(names.consumer()).topics(names.topic()).dataSource(postgres.database().dataSource())
                .schema(schema).handler(handler).retry(FAST).deadLetterTopic(names.deadLetterTopic())
                .pollTimeout(Duration.ofMillis(100));
    }

    @Test
    void a_transient_failure_is_retried_and_a_poison_event_dead_lettered_with_its_origin_in_headers()
            throws Exception {
        Names names = names("retry");
        int events = 300;
        List<UUID> ids = produce(names.topic(), events, 2, "poison");
        UUID poison = ids.get(events / 2);
        UUID flaky = ids.get(7);
        Map<UUID, AtomicInteger> flakyCalls = new ConcurrentHashMap<>();
        InboxHandler effect = recordEffect();
        InboxHandler handler = (c, e) -> {
            if (e.eventId().equals(poison)) {
                throw new OutboxException("rule violated by event " + e.eventId()); // permanent
            }
            if (e.eventId().equals(flaky) && flakyCalls.computeIfAbsent(flaky, x -> new AtomicInteger())
                    .incrementAndGet() <= 2) {
                throw new IllegalStateException("downstream timeout"); // transient, twice
            }
            effect.handle(c, e);
        };
        String consumer = names.consumer();
        for (String group : List.of(consumer, consumer + "-replay")) { // the second group replays the whole topic
            try (KafkaInboxConsumer c = handleMode(names, group, handler).build().start()) {
                await().atMost(AWAIT).until(() -> c.stats().polled() >= 2L * events);
                await().atMost(AWAIT).until(() -> c.stats().applied() + c.stats().duplicates()
                        + c.stats().deadLettered() == 2L * events);
                if (group.equals(consumer)) {
                    assertThat(c.stats().applied()).isEqualTo(events - 1);
                    assertThat(c.stats().retries()).isEqualTo(2);
                    assertThat(c.stats().deadLettered()).as("poison, twice (it is on the topic twice)").isEqualTo(2);
                } else {
                    assertThat(c.stats().applied()).isZero();
                }
            }
        }
        assertThat(effects(consumer)).isEqualTo(events - 1);
        assertThat(distinctEffects(consumer)).isEqualTo(events - 1);
        assertThat(flakyCalls.get(flaky).get()).isEqualTo(3);

        List<ConsumerRecord<byte[], byte[]>> dead = readAll(names.deadLetterTopic(), 4);
        assertThat(dead).hasSize(4); // twice per consumer group
        ConsumerRecord<byte[], byte[]> d = dead.get(0);
        assertThat(header(d, KafkaHeaders.EVENT_ID)).isEqualTo(poison.toString());
        assertThat(header(d, KafkaHeaders.DLT_REASON)).contains("rule violated");
        assertThat(header(d, KafkaHeaders.DLT_EXCEPTION)).isEqualTo(OutboxException.class.getName());
        assertThat(header(d, KafkaHeaders.DLT_ORIGINAL_TOPIC)).isEqualTo(names.topic());
        assertThat(header(d, KafkaHeaders.DLT_ORIGINAL_PARTITION)).matches("[0-2]");
        assertThat(header(d, KafkaHeaders.DLT_ORIGINAL_OFFSET)).matches("\\d+");
        assertThat(new String(d.key(), StandardCharsets.UTF_8)).isEqualTo("poison");
    }

    @Test
    void the_version_check_works_on_an_aggregate_id_with_a_nul_byte() throws Exception {
        Names names = names("versions");
        Map<UUID, InboxEvent> seen = new ConcurrentHashMap<>();
        byte[] nulId = {'a', 0x00, 'b'};
        try (KafkaInboxConsumer c = handleMode(names, names.consumer(), (conn, e) -> seen.put(e.eventId(), e))
                .checkVersions(true).build().start()) {
            UUID sr = send(names.topic(), SCHEMA_REGISTRY_KEY, Map.of());
            Map<String, byte[]> versioned = Map.of(KafkaHeaders.AGGREGATE_TYPE, "Order".getBytes(StandardCharsets.UTF_8),
                    KafkaHeaders.AGGREGATE_ID, nulId, KafkaHeaders.AGGREGATE_VERSION,
                    "1".getBytes(StandardCharsets.UTF_8));
            UUID bad = send(names.topic(), INVALID_UTF8_KEY, versioned);
            UUID stale = send(names.topic(), INVALID_UTF8_KEY, versioned);
            await().atMost(AWAIT).until(() -> c.stats().applied() + c.stats().stale() == 3);
            assertThat(seen).containsKeys(sr, bad);
            assertThat(seen.get(bad).headerBytes().get(KafkaHeaders.AGGREGATE_ID)).isEqualTo(nulId);
            assertThat(seen).doesNotContainKey(stale);
            assertThat(c.stats().stale()).as("the version check works on an aggregate id with NUL").isEqualTo(1);
            assertThat(c.stats().deadLettered()).isZero();
            assertThat(c.stats().loopErrors()).isZero();
        }
    }
}
