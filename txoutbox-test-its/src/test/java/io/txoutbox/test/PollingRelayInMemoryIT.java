package io.txoutbox.test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.txoutbox.EventFilter;
import io.txoutbox.FailurePolicy;
import io.txoutbox.Outbox;
import io.txoutbox.OutboxAdmin;
import io.txoutbox.OutboxMessage;
import io.txoutbox.PollingRelay;
import io.txoutbox.RetryPolicy;
import io.txoutbox.spi.OutboxRecord;
import io.txoutbox.spi.SendResult;
import io.txoutbox.spi.Transport;
import io.txoutbox.test.acceptance.RelayAcceptanceTest;
import io.txoutbox.test.acceptance.Sent;
import io.txoutbox.testing.logging.CapturedStderr;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The relay acceptance suite with the in-memory transport of the test kit, and the scenarios that need what only it
 * can do (an all-or-nothing batch on demand, a miscounting dead-letter send) or that are about the relay's wake-ups,
 * claim floor, lanes and log rather than the transport. Subclasses run all of it with other session defaults for
 * txoutbox's own connections ({@link #sessions}).
 *
 * <p>On the default PostgreSQL only (no {@code pg-version} tag): the version matrix runs these scenarios as
 * {@link LeastPrivilegeRelayIT}, the same statements on a role with exactly the relay's grants.
 */
class PollingRelayInMemoryIT extends RelayAcceptanceTest {

    /** What every relay of the scenario sends to (each relay gets a view of it that it may close). */
    InMemoryTransport transport;
    private InMemoryTransport.Rule poison;

    @BeforeEach
    void newInMemoryTransport() {
        transport = new InMemoryTransport();
    }

    @Override
    protected Transport newTransport() {
        InMemoryTransport shared = transport;
        return new Transport() {
            @Override
            public CompletionStage<List<SendResult>> send(String lane, List<OutboxRecord> batch) {
                return shared.send(lane, batch);
            }
        };
    }

    @Override
    protected String newTopic() {
        return "orders";
    }

    @Override
    protected String newDeadLetterTopic(String topic) {
        return topic + ".dlt";
    }

    @Override
    protected List<Sent> delivered(String topic, int atLeast) {
        try {
            transport.awaitDelivered(r -> r.topic().equals(topic), atLeast, WAIT);
        } catch (AssertionError notAll) {
            // the scenario judges what is there
        }
        return transport.delivered(topic).stream().map(r -> new Sent(r.topic(), r.key(), r.eventId(),
                r.eventType(), r.value() == null ? null : new String(r.value(), StandardCharsets.UTF_8),
                r.headers())).toList();
    }

    @Override
    protected OutboxMessage.Builder poison(OutboxMessage.Builder message) {
        if (poison == null) {
            String topic = topic();
            poison = transport.failWhen(r -> r.eventType().equals("Poison") && r.topic().equals(topic),
                    SendResult.Kind.PERMANENT);
        }
        return message.eventType("Poison");
    }

    @Override
    protected void curePoison(String topic) {
        poison.remove();
    }

    @Override
    protected String poisonError() {
        return "injected permanent failure";
    }

    @Override
    protected void brokerDown() {
        transport.goDown();
    }

    @Override
    protected void brokerUp() {
        transport.comeUp();
    }

    @Test
    void a_nudge_wakes_the_relay_long_before_its_poll_interval() throws Exception {
        PollingRelay relay = start(relay().pollInterval(Duration.ofMinutes(5)));
        Outbox outbox = outbox(relay);
        await().atMost(WAIT).until(() -> relay.stats().lanesOwned() == 2);
        UUID id = write(outbox, message("o-1", "OrderCreated")).get(0);
        // with a 5-minute poll interval only the nudge can deliver it within the wait
        transport.awaitDelivered(id, Duration.ofSeconds(10));
    }

    @Test
    void listen_notify_wakes_a_relay_in_another_process_without_a_nudge() throws Exception {
        PollingRelay relay = start(relay().pollInterval(Duration.ofMinutes(5)).listenNotify(true));
        Outbox notifying = Outbox.builder().schema(schema()).notifyOnPublish(true).build();
        await().atMost(WAIT).until(() -> relay.stats().lanesOwned() == 2);
        // the listener connects asynchronously: write until the first event is picked up
        await().atMost(Duration.ofSeconds(20)).until(() -> {
            UUID id = write(notifying, message("o-" + UUID.randomUUID(), "OrderCreated")).get(0);
            try {
                transport.awaitDelivered(id, Duration.ofSeconds(2));
                return true;
            } catch (AssertionError notYet) {
                return false;
            }
        });
    }

    /**
     * The claim floor (the relay starts its index scan above ids it knows are settled) must never pass a row whose
     * transaction is still open: here one stays open while 60 later events are published around it.
     */
    @Test
    void a_long_open_transaction_below_sixty_published_events_is_still_delivered_in_key_order()
            throws Exception {
        PollingRelay relay = start(relay());
        Outbox outbox = outbox(relay);
        UUID late;
        List<UUID> around = new ArrayList<>();
        try (Connection a = db().connect()) {
            a.setAutoCommit(false);
            late = outbox.publish(a, message("k-late", "First")).get(0);
            for (int round = 0; round < 30; round++) { // keeps the relay busy well past its settlement checks
                List<UUID> ids = write(outbox, message("k" + round, "E"), message("k" + (round + 1), "E"));
                transport.awaitDelivered(ids.get(1), WAIT);
                around.addAll(ids);
            }
            assertThat(transport.delivered()).extracting(OutboxRecord::eventId).doesNotContain(late);
            a.commit();
        }
        UUID after = write(outbox, message("k-late", "Second")).get(0);
        transport.awaitDelivered(after, WAIT);
        transport.awaitDelivered(late, WAIT);
        // the two events of a round may go out in different lanes: wait for all before counting
        transport.awaitDelivered(r -> true, around.size() + 2, WAIT);
        assertThat(DeliveredEvents.of(transport.delivered()).eventTypesOfKey("k-late")).containsExactly("First",
                "Second");
        DeliveredEvents.of(transport.delivered()).assertCount(around.size() + 2).assertNoDuplicates();
    }

    @Test
    void a_dead_event_put_back_to_pending_below_the_claim_floor_is_found_by_the_sweep() throws Exception {
        PollingRelay relay = start(relay().failurePolicy(FailurePolicy.DEAD_LETTER_AND_CONTINUE));
        Outbox outbox = outbox(relay);
        InMemoryTransport.Rule poisonFails = transport.failWhen(r -> r.eventType().equals("Poison"),
                SendResult.Kind.PERMANENT);
        UUID poisoned = write(outbox, message("k1", "Poison")).get(0);
        await().atMost(WAIT).until(() -> relay.stats().deadLettered() == 1);
        for (int round = 0; round < 20; round++) { // the floor moves past the dead row
            List<UUID> ids = write(outbox, message("k" + (round + 2), "E"));
            transport.awaitDelivered(ids.get(0), WAIT);
        }
        poisonFails.remove();
        try (Connection c = db().connect();
                var st = c.prepareStatement("UPDATE " + schema().qualifiedOutboxTable()
                        + " SET " + putBackByHand() + " WHERE event_id = ?")) {
            st.setObject(1, poisoned);
            assertThat(st.executeUpdate()).isEqualTo(1);
        }
        transport.awaitDelivered(poisoned, WAIT);
    }

    /**
     * How the sweep scenario puts a dead row back to pending by hand: without a {@code next_attempt_at}, which the
     * row-state model's claim sweep finds.
     */
    protected String putBackByHand() {
        return "state = 'PENDING', next_attempt_at = NULL";
    }

    /**
     * Regression: with all-or-nothing batches (Kafka transactions) the key's earlier event comes back COLLATERAL
     * before the poison; the relay once skipped the poison's PERMANENT result because of it and never parked.
     */
    @Test
    void poison_behind_an_earlier_event_of_its_key_in_an_all_or_nothing_batch_is_parked_after_that_event_goes_out()
            throws Exception {
        transport.allOrNothing(true);
        Outbox outbox = Outbox.builder().schema(schema()).build();
        transport.failWhen(r -> r.eventType().equals("Poison"), SendResult.Kind.PERMANENT);
        List<UUID> ids = write(outbox, message("k1", "E1"), message("k1", "Poison"), message("k1", "E3"),
                message("k2", "E1"));
        start(relay().lanes(1));
        OutboxAdmin admin = admin();
        await().atMost(WAIT).until(() -> admin.list(EventFilter.parked(), 0, 10).size() == 1);
        transport.awaitDelivered(ids.get(0), WAIT);
        transport.awaitDelivered(ids.get(3), WAIT);
        assertThat(admin.list(EventFilter.parked(), 0, 10).get(0).eventId()).isEqualTo(ids.get(1));
        assertThat(transport.delivered()).extracting(OutboxRecord::eventId).doesNotContain(ids.get(2));
    }


    @Test
    void a_dead_letter_send_answered_with_fewer_results_than_records_keeps_the_events_pending_and_the_loop_alive()
            throws Exception {
        deadLetterSendWithWrongResultCount(-1);
    }

    @Test
    void a_dead_letter_send_answered_with_more_results_than_records_is_not_taken_as_delivered() throws Exception {
        deadLetterSendWithWrongResultCount(+1);
    }

    /**
     * The dead-letter send's results come back with {@code delta} results too many or too few: the whole send counts
     * as failed (the events stay pending with a reason that says so, none is taken as dead-lettered on a result that
     * may belong to another record), the loop does not throw, and once the transport answers correctly both go to
     * the dead-letter topic.
     */
    private void deadLetterSendWithWrongResultCount(int delta) throws Exception {
        AtomicBoolean miscount = new AtomicBoolean(true);
        AtomicInteger miscounted = new AtomicInteger();
        Transport miscounting = new Transport() {
            @Override
            public CompletionStage<List<SendResult>> send(String lane,
                    List<OutboxRecord> batch) {
                var sent = transport.send(lane, batch);
                if (!lane.endsWith("-dlt") || !miscount.get()) {
                    return sent;
                }
                miscounted.incrementAndGet();
                return sent.thenApply(results -> {
                    List<SendResult> wrong = new ArrayList<>(results);
                    if (delta < 0) {
                        wrong.remove(wrong.size() - 1);
                    } else {
                        wrong.add(SendResult.delivered());
                    }
                    return wrong;
                });
            }

            @Override
            public void close() {
                transport.close();
            }
        };
        PollingRelay relay = start(relay().transport(miscounting).lanes(1)
                .failurePolicy(FailurePolicy.DEAD_LETTER_AND_CONTINUE).deadLetterTopic("orders.dlt"));
        Outbox outbox = outbox(relay);
        transport.failWhen(r -> r.eventType().equals("Poison") && r.topic().equals("orders"),
                SendResult.Kind.PERMANENT);
        List<UUID> ids = write(outbox, message("k1", "Poison"), message("k2", "Poison"), message("k3", "E"));
        transport.awaitDelivered(ids.get(2), WAIT);
        await().atMost(WAIT).until(() -> miscounted.get() >= 3);
        String t = schema().qualifiedOutboxTable();
        assertThat(db().queryLong("SELECT count(*) FROM " + t + " WHERE event_type = 'Poison' AND state = 'PENDING'"
                + " AND last_error LIKE '%dead-letter%results%'")).as("both pending, the reason names the miscount")
                .isEqualTo(2);
        assertThat(relay.stats().deadLettered()).isZero();
        assertThat(relay.stats().loopErrors()).as("a miscount is a failed send, not a loop error").isZero();
        miscount.set(false);
        await().atMost(WAIT).until(() -> relay.stats().deadLettered() == 2);
        assertThat(db().queryLong("SELECT count(*) FROM " + t + " WHERE event_type = 'Poison' AND state = 'DEAD'"))
                .isEqualTo(2);
        assertThat(relay.stats().loopErrors()).isZero();
    }

    /** A key that is personal data: it must not reach the log unless asked for. */
    private static final String PERSONAL_KEY = "customer-4711@example.com";

    /** Fails the key's event until it parks, capturing the relay's log; returns the log and the event id. */
    private String parkPersonalKey(PollingRelay.Builder builder, UUID[] eventId) throws Exception {
        try (CapturedStderr err = CapturedStderr.start()) {
            PollingRelay relay = start(builder.retry(RetryPolicy.defaults().withMaxAttempts(2)
                    .withBackoff(Duration.ofMillis(50), Duration.ofMillis(50))));
            Outbox outbox = outbox(relay);
            transport.failWhen(r -> PERSONAL_KEY.equals(r.key()), SendResult.Kind.RETRIABLE);
            eventId[0] = write(outbox, message(PERSONAL_KEY, "E1")).get(0);
            await().atMost(WAIT).until(() -> relay.stats().parked() == 1);
            String log = err.text();
            assertThat(log).contains(eventId[0] + " (key ").contains(eventId[0] + " failed 2 times; its key ");
            return log;
        }
    }

    @Test
    void partition_keys_stay_out_of_the_relay_log_by_default() throws Exception {
        UUID[] id = new UUID[1];
        String log = parkPersonalKey(relay(), id);
        assertThat(log).doesNotContain(PERSONAL_KEY);
        String tag = io.txoutbox.internal.LoggedKeys.tag(PERSONAL_KEY);
        assertThat(log).as("the lines of the key share its tag").contains(id[0] + " (key " + tag + ") failed")
                .contains("its key " + tag + " is parked");
    }

    @Test
    void partition_keys_are_in_the_relay_log_when_enabled() throws Exception {
        UUID[] id = new UUID[1];
        String log = parkPersonalKey(relay().logPartitionKeys(true), id);
        assertThat(log).contains(id[0] + " (key " + PERSONAL_KEY + ") failed")
                .contains("its key " + PERSONAL_KEY + " is parked");
    }


    @Test
    void max_lanes_per_instance_leaves_the_rest_to_others() throws Exception {
        PollingRelay capped = start(relay().lanes(4).maxLanesPerInstance(1));
        await().atMost(WAIT).until(() -> capped.stats().lanesOwned() == 1);
        PollingRelay other = start(relay().lanes(4).transport(new InMemoryTransport()));
        await().atMost(WAIT).until(() -> other.stats().lanesOwned() == 3);
        assertThat(capped.stats().lanesOwned()).isEqualTo(1);
    }

    @Test
    void a_relay_with_a_different_lane_count_refuses_to_work_alongside() throws Exception {
        PollingRelay two = start(relay().lanes(2));
        await().atMost(WAIT).until(() -> two.stats().lanesOwned() == 2);
        PollingRelay four = start(relay().lanes(4).name("four"));
        Outbox outbox = Outbox.builder().schema(schema()).afterPublish(two::nudge).build();
        for (int i = 0; i < 50; i++) {
            write(outbox, message("k" + i, "E"));
        }
        transport.awaitDelivered(r -> true, 50, WAIT);
        assertThat(four.stats().lanesOwned()).as("lanes 2 and 3 exist only in the 4-lane relay").isZero();
        assertThat(four.stats().published()).isZero();
    }
}
