package io.txoutbox.test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.txoutbox.spi.OutboxRecord;
import io.txoutbox.spi.SendResult;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;

class InMemoryTransportTest {

    private static long ids;

    private static OutboxRecord record(String key, String type) {
        return new OutboxRecord(++ids, UUID.randomUUID(), "orders", key, "Order", key, null, type,
                ("{\"type\":\"" + type + "\"}").getBytes(StandardCharsets.UTF_8), true, Map.of(), Instant.now(), 0);
    }

    private static List<SendResult> send(InMemoryTransport t, List<OutboxRecord> batch) {
        return t.send("lane-0", batch).toCompletableFuture().join();
    }

    @Test
    void delivers_in_order_and_helpers_see_it() {
        InMemoryTransport t = new InMemoryTransport();
        OutboxRecord a = record("k1", "Created");
        OutboxRecord b = record("k1", "Paid");
        List<SendResult> results = send(t, List.of(a, b));
        assertThat(results).allMatch(SendResult::isDelivered);
        assertThat(t.awaitDelivered(a.eventId(), Duration.ofSeconds(1))).isEqualTo(a);
        DeliveredEvents.of(t.delivered("orders")).assertCount(2).assertNoDuplicates()
                .assertKeyOrder("k1", "Created", "Paid").assertPayloadContains(b.eventId(), "Paid");
        assertThatThrownBy(() -> DeliveredEvents.of(t.delivered()).assertKeyOrder("k1", "Paid", "Created"))
                .isInstanceOf(AssertionError.class).hasMessageContaining("[Created, Paid]");
    }

    /**
     * A broker that comes back while a batch is being sent must not deliver a key's later record after its earlier
     * one failed as unavailable: the batch's iterator brings the broker back between the two records, the
     * interleaving a relay's {@code comeUp()} on another thread can hit.
     */
    @Test
    void a_broker_that_comes_back_during_a_batch_does_not_deliver_a_keys_later_record_before_its_first() {
        InMemoryTransport t = new InMemoryTransport();
        OutboxRecord first = record("k1", "Created");
        OutboxRecord second = record("k1", "Paid");
        t.goDown();
        List<OutboxRecord> batch = new java.util.AbstractList<>() {
            @Override
            public OutboxRecord get(int index) {
                if (index == 1) {
                    t.comeUp(); // the broker is back after the first record was refused
                }
                return index == 0 ? first : second;
            }

            @Override
            public int size() {
                return 2;
            }
        };
        List<SendResult> results = send(t, batch);
        assertThat(results.get(0).isDelivered()).as("the first record, sent while the broker was down").isFalse();
        assertThat(results.get(1).isDelivered()).as("the key's later record").isFalse();
        assertThat(t.delivered()).isEmpty();
    }

    @Test
    void a_failed_record_holds_back_the_later_records_of_its_key_only() {
        InMemoryTransport t = new InMemoryTransport();
        OutboxRecord k1a = record("k1", "A");
        OutboxRecord k2a = record("k2", "A");
        OutboxRecord k1b = record("k1", "B");
        OutboxRecord k2b = record("k2", "B");
        t.failOnce(k1a.eventId());
        List<SendResult> results = send(t, List.of(k1a, k2a, k1b, k2b));
        assertThat(results.get(0)).isInstanceOf(SendResult.Failed.class);
        assertThat(((SendResult.Failed) results.get(0)).kind()).isEqualTo(SendResult.Kind.RETRIABLE);
        assertThat(results.get(1).isDelivered()).isTrue();
        assertThat(((SendResult.Failed) results.get(2)).kind()).isEqualTo(SendResult.Kind.COLLATERAL);
        assertThat(results.get(3).isDelivered()).isTrue();
        assertThat(t.delivered()).containsExactly(k2a, k2b);
        // the rule fired once: the retry goes through
        assertThat(send(t, List.of(k1a, k1b))).allMatch(SendResult::isDelivered);
    }

    @Test
    void down_fails_everything_retriably_until_up_and_permanent_rules_stay() {
        InMemoryTransport t = new InMemoryTransport();
        t.goDown();
        assertThat(send(t, List.of(record("k", "A")))).allMatch(r -> r instanceof SendResult.Failed f
                && f.kind() == SendResult.Kind.UNAVAILABLE);
        t.comeUp();
        InMemoryTransport.Rule rule = t.failWhen(r -> r.eventType().equals("Poison"), SendResult.Kind.PERMANENT);
        assertThat(send(t, List.of(record("k", "Poison"))).get(0)).isInstanceOf(SendResult.Failed.class);
        assertThat(send(t, List.of(record("k", "Poison"))).get(0)).isInstanceOf(SendResult.Failed.class);
        rule.remove();
        assertThat(send(t, List.of(record("k", "Poison"))).get(0).isDelivered()).isTrue();
    }

    @Test
    void await_times_out_with_a_clear_message_and_wakes_on_delivery() throws Exception {
        InMemoryTransport t = new InMemoryTransport();
        assertThatThrownBy(() -> t.awaitDelivered(r -> true, Duration.ofMillis(50)))
                .isInstanceOf(AssertionError.class).hasMessageContaining("found 0");
        OutboxRecord r = record("k", "Late");
        CompletableFuture<OutboxRecord> waiting =
                CompletableFuture.supplyAsync(() -> t.awaitDelivered(r.eventId(), Duration.ofSeconds(5)));
        send(t, List.of(r));
        assertThat(waiting.get()).isEqualTo(r);
    }

    @Test
    void a_wait_that_times_out_says_where_the_relay_threads_are() throws Exception {
        java.util.concurrent.CountDownLatch release = new java.util.concurrent.CountDownLatch(1);
        Thread lane = new Thread(() -> waitsForThePool(release), "txoutbox-relay-test-0");
        lane.start();
        try {
            org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(10))
                    .until(() -> lane.getState() == Thread.State.TIMED_WAITING);
            assertThatThrownBy(() -> new InMemoryTransport().awaitDelivered(r -> true, 1, Duration.ofMillis(50)))
                    .isInstanceOf(AssertionError.class)
                    .hasMessageContaining("expected 1 delivered record(s) matching the condition within PT0.05S, "
                            + "found 0 (delivered in all: 0)")
                    .hasMessageContaining("relay threads: [txoutbox-relay-test-0 TIMED_WAITING in ")
                    .hasMessageContaining("InMemoryTransportTest.waitsForThePool");
        } finally {
            release.countDown();
            lane.join(10_000);
        }
        assertThatThrownBy(() -> new InMemoryTransport().awaitDelivered(r -> true, 1, Duration.ofMillis(10)))
                .as("once no relay thread runs").hasMessageEndingWith("; no relay lane thread runs in this JVM");
    }

    private static void waitsForThePool(java.util.concurrent.CountDownLatch release) {
        try {
            release.await(60, java.util.concurrent.TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
