package io.txoutbox.test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.txoutbox.FailurePolicy;
import io.txoutbox.Outbox;
import io.txoutbox.OutboxAdmin;
import io.txoutbox.OutboxMessage;
import io.txoutbox.OutboxSchema;
import io.txoutbox.PollingRelay;
import io.txoutbox.RetryPolicy;
import io.txoutbox.spi.OutboxRecord;
import io.txoutbox.spi.SendResult;
import io.txoutbox.testing.history.Delivery;
import io.txoutbox.testing.history.HistoryAssert;
import io.txoutbox.testing.history.HistoryChecker;
import io.txoutbox.testing.history.HistoryReport;
import io.txoutbox.testing.history.Ledger;
import io.txoutbox.testing.history.LedgerWriter;
import io.txoutbox.testing.postgres.PostgresExtension;
import io.txoutbox.testing.logging.CapturedStderr;
import io.txoutbox.testing.postgres.TestDatabase;
import java.sql.Connection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The polling relay against a real PostgreSQL, with the in-memory transport of the test kit. Subclasses run the same
 * scenarios with other session defaults for txoutbox's own connections ({@link #sessions}).
 *
 * <p>On the default PostgreSQL only (no {@code pg-version} tag): the version matrix runs these scenarios as
 * {@link LeastPrivilegeRelayIT}, the same statements on a role with exactly the relay's grants.
 */
class PollingRelayInMemoryIT {

    @RegisterExtension
    static final PostgresExtension postgres = new PostgresExtension();

    private static final Duration WAIT = Duration.ofSeconds(30);

    private TestDatabase db;
    private DataSource sessions;
    private DataSource relaySessions;
    private DataSource adminSessions;
    private OutboxSchema schema;
    private Outbox outbox;
    private InMemoryTransport transport;
    private final List<PollingRelay> relays = new ArrayList<>();

    @BeforeEach
    void setUp(TestInfo info) {
        db = postgres.database();
        sessions = sessions(db);
        String name = info.getTestMethod().orElseThrow().getName();
        schema = OutboxSchema.builder().schema(db.schema()).outboxTable("ob_" + Math.abs(name.hashCode())).shards(8)
                .build();
        schema.migrate(sessions);
        relaySessions = relaySessions(db, schema);
        adminSessions = adminSessions(db, schema);
        transport = new InMemoryTransport();
    }

    /** Where the relay, the admin and the migration take their connections (the writers use the test database's). */
    DataSource sessions(TestDatabase db) {
        return db.dataSource();
    }

    /** Where the relay takes its connections, once the table exists; by default {@link #sessions}. */
    DataSource relaySessions(TestDatabase db, OutboxSchema schema) {
        return sessions;
    }

    /** Where {@code OutboxAdmin} takes its connections, once the table exists; by default {@link #sessions}. */
    DataSource adminSessions(TestDatabase db, OutboxSchema schema) {
        return sessions;
    }

    @AfterEach
    void tearDown() {
        relays.forEach(PollingRelay::close);
    }

    private PollingRelay.Builder relay() {
        return PollingRelay.builder().dataSource(relaySessions).schema(schema).transport(transport).lanes(2)
                .batchSize(100).pollInterval(Duration.ofMillis(50))
                .retry(RetryPolicy.defaults().withBackoff(Duration.ofMillis(50), Duration.ofMillis(200)));
    }

    private PollingRelay start(PollingRelay.Builder builder) {
        PollingRelay r = builder.build();
        relays.add(r);
        r.start();
        return r;
    }

    private Outbox outbox(PollingRelay relay) {
        return Outbox.builder().schema(schema).afterPublish(relay::nudge).build();
    }

    private static OutboxMessage event(String key, String type) {
        return OutboxMessage.builder().topic("orders").aggregate("Order", key).eventType(type)
                .jsonPayload("{\"type\":\"" + type + "\"}").build();
    }

    private List<UUID> write(Outbox o, OutboxMessage... messages) throws Exception {
        try (Connection c = db.connect()) {
            c.setAutoCommit(false);
            List<UUID> ids = o.publish(c, messages);
            c.commit();
            return ids;
        }
    }

    @Test
    void commit_is_delivered_and_rollback_is_not() throws Exception {
        PollingRelay relay = start(relay());
        outbox = outbox(relay);
        UUID committed = write(outbox, event("o-1", "OrderCreated")).get(0);
        UUID rolledBack;
        try (Connection c = db.connect()) {
            c.setAutoCommit(false);
            rolledBack = outbox.publish(c, event("o-2", "OrderCreated")).get(0);
            c.rollback();
        }
        transport.awaitDelivered(committed, WAIT);
        await().atMost(WAIT).until(() -> OutboxAdmin.create(adminSessions, schema).pendingCount() == 0);
        assertThat(transport.delivered()).extracting(OutboxRecord::eventId).containsExactly(committed)
                .doesNotContain(rolledBack);
        OutboxRecord r = transport.delivered().get(0);
        assertThat(new String(r.value())).isEqualTo("{\"type\": \"OrderCreated\"}");
        assertThat(db.queryLong("SELECT count(*) FROM " + schema.qualifiedOutboxTable()
                + " WHERE state = 'PUBLISHED' AND published_at IS NOT NULL")).isEqualTo(1);
    }

    @Test
    void a_nudge_wakes_the_relay_long_before_its_poll_interval() throws Exception {
        PollingRelay relay = start(relay().pollInterval(Duration.ofMinutes(5)));
        outbox = outbox(relay);
        await().atMost(WAIT).until(() -> relay.stats().lanesOwned() == 2);
        UUID id = write(outbox, event("o-1", "OrderCreated")).get(0);
        // with a 5-minute poll interval only the nudge can deliver it within the wait
        transport.awaitDelivered(id, Duration.ofSeconds(10));
    }

    @Test
    void listen_notify_wakes_a_relay_in_another_process_without_a_nudge() throws Exception {
        start(relay().pollInterval(Duration.ofMinutes(5)).listenNotify(true));
        Outbox notifying = Outbox.builder().schema(schema).notifyOnPublish(true).build();
        Thread.onSpinWait();
        await().atMost(WAIT).until(() -> relays.get(0).stats().lanesOwned() == 2);
        // the listener connects asynchronously: write until the first event is picked up
        await().atMost(Duration.ofSeconds(20)).until(() -> {
            UUID id = write(notifying, event("o-" + UUID.randomUUID(), "OrderCreated")).get(0);
            try {
                transport.awaitDelivered(id, Duration.ofSeconds(2));
                return true;
            } catch (AssertionError notYet) {
                return false;
            }
        });
    }

    @Test
    void out_of_id_order_commits_are_both_delivered() throws Exception {
        PollingRelay relay = start(relay());
        outbox = outbox(relay);
        UUID late;
        UUID early;
        try (Connection a = db.connect(); Connection b = db.connect()) {
            a.setAutoCommit(false);
            b.setAutoCommit(false);
            late = outbox.publish(a, event("k-a", "First")).get(0);   // takes the lower id
            early = outbox.publish(b, event("k-b", "Second")).get(0); // higher id, commits first
            b.commit();
            transport.awaitDelivered(early, WAIT);
            a.commit();
        }
        transport.awaitDelivered(late, WAIT);
        DeliveredEvents.of(transport.delivered()).assertCount(2).assertNoDuplicates();
    }

    /**
     * The claim floor (the relay starts its index scan above ids it knows are settled) must never pass a row whose
     * transaction is still open: here one stays open while 60 later events are published around it.
     */
    @Test
    void a_long_open_transaction_below_sixty_published_events_is_still_delivered_in_key_order()
            throws Exception {
        PollingRelay relay = start(relay());
        outbox = outbox(relay);
        UUID late;
        List<UUID> around = new ArrayList<>();
        try (Connection a = db.connect()) {
            a.setAutoCommit(false);
            late = outbox.publish(a, event("k-late", "First")).get(0);
            for (int round = 0; round < 30; round++) { // keeps the relay busy well past its settlement checks
                List<UUID> ids = write(outbox, event("k" + round, "E"), event("k" + (round + 1), "E"));
                transport.awaitDelivered(ids.get(1), WAIT);
                around.addAll(ids);
            }
            assertThat(transport.delivered()).extracting(OutboxRecord::eventId).doesNotContain(late);
            a.commit();
        }
        UUID after = write(outbox, event("k-late", "Second")).get(0);
        transport.awaitDelivered(after, WAIT);
        transport.awaitDelivered(late, WAIT);
        assertThat(DeliveredEvents.of(transport.delivered()).eventTypesOfKey("k-late")).containsExactly("First",
                "Second");
        DeliveredEvents.of(transport.delivered()).assertCount(around.size() + 2).assertNoDuplicates();
    }

    @Test
    void a_dead_event_put_back_to_pending_below_the_claim_floor_is_found_by_the_sweep() throws Exception {
        PollingRelay relay = start(relay().failurePolicy(FailurePolicy.DEAD_LETTER_AND_CONTINUE));
        outbox = outbox(relay);
        InMemoryTransport.Rule poisonFails = transport.failWhen(r -> r.eventType().equals("Poison"),
                SendResult.Kind.PERMANENT);
        UUID poison = write(outbox, event("k1", "Poison")).get(0);
        await().atMost(WAIT).until(() -> relay.stats().deadLettered() == 1);
        for (int round = 0; round < 20; round++) { // the floor moves past the dead row
            List<UUID> ids = write(outbox, event("k" + (round + 2), "E"));
            transport.awaitDelivered(ids.get(0), WAIT);
        }
        poisonFails.remove();
        try (Connection c = db.connect();
                var st = c.prepareStatement("UPDATE " + schema.qualifiedOutboxTable() + " SET state = 'PENDING', next_attempt_at = NULL WHERE event_id = ?")) {
            st.setObject(1, poison);
            assertThat(st.executeUpdate()).isEqualTo(1);
        }
        transport.awaitDelivered(poison, WAIT);
    }

    @Test
    void a_record_failed_in_the_middle_of_a_batch_holds_back_only_its_key_and_keeps_its_order() throws Exception {
        // write first, start the relay after, so everything is one batch
        outbox = Outbox.builder().schema(schema).build();
        List<OutboxMessage> messages = new ArrayList<>();
        for (int seq = 1; seq <= 5; seq++) {
            for (String key : List.of("k1", "k2", "k3")) {
                messages.add(event(key, "E" + seq));
            }
        }
        List<UUID> ids = write(outbox, messages.toArray(new OutboxMessage[0]));
        UUID k2third = ids.get(7); // k2's E3, in the middle of the batch
        transport.failOnce(k2third);
        start(relay().lanes(1));
        transport.awaitDelivered(r -> true, 15, WAIT);
        DeliveredEvents delivered = DeliveredEvents.of(transport.delivered()).assertNoDuplicates();
        for (String key : List.of("k1", "k2", "k3")) {
            delivered.assertKeyOrder(key, "E1", "E2", "E3", "E4", "E5");
        }
        // k1 and k3 went out in the first batch, k2 only up to E2 there
        assertThat(transport.batchSizes().get(0)).isEqualTo(15);
        assertThat(db.queryLong("SELECT attempts FROM " + schema.qualifiedOutboxTable() + " WHERE event_id = '"
                + k2third + "'")).isEqualTo(1);
    }

    @Test
    void poison_event_parks_its_key_other_keys_flow_and_release_resumes_in_order() throws Exception {
        PollingRelay relay = start(relay().failurePolicy(FailurePolicy.PARK_KEY));
        outbox = outbox(relay);
        InMemoryTransport.Rule poison = transport.failWhen(r -> r.eventType().equals("Poison"),
                SendResult.Kind.PERMANENT);
        List<UUID> ids = write(outbox, event("k1", "E1"), event("k1", "Poison"), event("k1", "E3"),
                event("k2", "E1"), event("k2", "E2"));
        transport.awaitDelivered(r -> "k2".equals(r.key()), 2, WAIT);
        OutboxAdmin admin = OutboxAdmin.create(adminSessions, schema);
        await().atMost(WAIT).until(() -> admin.parkedKeys(10).size() == 1);
        OutboxAdmin.ParkedKey parked = admin.parkedKeys(10).get(0);
        assertThat(parked.key()).isEqualTo("k1");
        assertThat(parked.eventId()).isEqualTo(ids.get(1));
        assertThat(parked.waiting()).isEqualTo(1);
        assertThat(parked.lastError()).contains("injected permanent failure");
        assertThat(DeliveredEvents.of(transport.delivered()).eventTypesOfKey("k1")).containsExactly("E1");
        await().atMost(WAIT).until(() -> relay.stats().parked() == 1);
        assertThat(db.queryLong("SELECT count(*) FROM " + schema.qualifiedOutboxTable()
                + " WHERE state = 'PARKED' AND failed_at IS NOT NULL")).as("parking sets failed_at").isEqualTo(1);

        poison.remove();
        assertThat(admin.retryNow(parked.eventId())).isTrue();
        transport.awaitDelivered(r -> "k1".equals(r.key()), 3, WAIT);
        DeliveredEvents.of(transport.delivered()).assertNoDuplicates().assertKeyOrder("k1", "E1", "Poison", "E3");
    }

    /**
     * Regression: with all-or-nothing batches (Kafka transactions) the key's earlier event comes back COLLATERAL
     * before the poison; the relay once skipped the poison's PERMANENT result because of it and never parked.
     */
    @Test
    void poison_behind_an_earlier_event_of_its_key_in_an_all_or_nothing_batch_is_parked_after_that_event_goes_out()
            throws Exception {
        transport.allOrNothing(true);
        outbox = Outbox.builder().schema(schema).build();
        transport.failWhen(r -> r.eventType().equals("Poison"), SendResult.Kind.PERMANENT);
        List<UUID> ids = write(outbox, event("k1", "E1"), event("k1", "Poison"), event("k1", "E3"),
                event("k2", "E1"));
        start(relay().lanes(1));
        OutboxAdmin admin = OutboxAdmin.create(adminSessions, schema);
        await().atMost(WAIT).until(() -> admin.parkedKeys(10).size() == 1);
        transport.awaitDelivered(ids.get(0), WAIT);
        transport.awaitDelivered(ids.get(3), WAIT);
        assertThat(admin.parkedKeys(10).get(0).eventId()).isEqualTo(ids.get(1));
        assertThat(transport.delivered()).extracting(OutboxRecord::eventId).doesNotContain(ids.get(2));
    }

    @Test
    void skip_gives_up_a_parked_event_and_the_key_moves_on() throws Exception {
        PollingRelay relay = start(relay());
        outbox = outbox(relay);
        transport.failWhen(r -> r.eventType().equals("Poison"), SendResult.Kind.PERMANENT);
        List<UUID> ids = write(outbox, event("k1", "Poison"), event("k1", "E2"));
        OutboxAdmin admin = OutboxAdmin.create(adminSessions, schema);
        await().atMost(WAIT).until(() -> admin.parkedKeys(10).size() == 1);
        assertThat(admin.skip(ids.get(0))).isTrue();
        transport.awaitDelivered(ids.get(1), WAIT);
        assertThat(admin.deadEvents(10)).extracting(OutboxAdmin.DeadEvent::eventId).containsExactly(ids.get(0));
        assertThat(admin.skip(ids.get(0))).as("only parked events can be skipped").isFalse();
    }

    @Test
    void dead_letter_and_continue_moves_the_poison_to_the_dead_letter_topic_with_the_reason() throws Exception {
        PollingRelay relay = start(relay().failurePolicy(FailurePolicy.DEAD_LETTER_AND_CONTINUE)
                .deadLetterTopic("orders.dlt"));
        outbox = outbox(relay);
        transport.failWhen(r -> r.eventType().equals("Poison") && r.topic().equals("orders"),
                SendResult.Kind.PERMANENT);
        List<UUID> ids = write(outbox, event("k1", "E1"), event("k1", "Poison"), event("k1", "E3"));
        transport.awaitDelivered(ids.get(2), WAIT);
        OutboxRecord dead = transport.awaitDelivered(r -> r.topic().equals("orders.dlt"), WAIT);
        assertThat(dead.eventId()).isEqualTo(ids.get(1));
        assertThat(dead.headers()).containsEntry("dlt-original-topic", "orders")
                .containsKey("dlt-exception").containsKey("dlt-reason");
        assertThat(DeliveredEvents.of(transport.delivered("orders")).eventTypesOfKey("k1"))
                .containsExactly("E1", "E3");
        OutboxAdmin admin = OutboxAdmin.create(adminSessions, schema);
        assertThat(admin.deadEvents(10)).extracting(OutboxAdmin.DeadEvent::eventId).containsExactly(ids.get(1));
        await().atMost(WAIT).until(() -> relay.stats().deadLettered() == 1);
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
        java.util.concurrent.atomic.AtomicBoolean miscount = new java.util.concurrent.atomic.AtomicBoolean(true);
        java.util.concurrent.atomic.AtomicInteger miscounted = new java.util.concurrent.atomic.AtomicInteger();
        io.txoutbox.spi.Transport miscounting = new io.txoutbox.spi.Transport() {
            @Override
            public java.util.concurrent.CompletionStage<List<SendResult>> send(String lane,
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
        outbox = outbox(relay);
        transport.failWhen(r -> r.eventType().equals("Poison") && r.topic().equals("orders"),
                SendResult.Kind.PERMANENT);
        List<UUID> ids = write(outbox, event("k1", "Poison"), event("k2", "Poison"), event("k3", "E"));
        transport.awaitDelivered(ids.get(2), WAIT);
        await().atMost(WAIT).until(() -> miscounted.get() >= 3);
        String t = schema.qualifiedOutboxTable();
        assertThat(db.queryLong("SELECT count(*) FROM " + t + " WHERE event_type = 'Poison' AND state = 'PENDING'"
                + " AND last_error LIKE '%dead-letter%results%'")).as("both pending, the reason names the miscount")
                .isEqualTo(2);
        assertThat(relay.stats().deadLettered()).isZero();
        assertThat(relay.stats().loopErrors()).as("a miscount is a failed send, not a loop error").isZero();
        miscount.set(false);
        await().atMost(WAIT).until(() -> relay.stats().deadLettered() == 2);
        assertThat(db.queryLong("SELECT count(*) FROM " + t + " WHERE event_type = 'Poison' AND state = 'DEAD'"))
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
            outbox = outbox(relay);
            transport.failWhen(r -> PERSONAL_KEY.equals(r.key()), SendResult.Kind.RETRIABLE);
            eventId[0] = write(outbox, event(PERSONAL_KEY, "E1")).get(0);
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
    void retriable_failures_back_off_per_key_then_exhaust_into_the_policy() throws Exception {
        PollingRelay relay = start(relay().retry(RetryPolicy.defaults().withMaxAttempts(3)
                .withBackoff(Duration.ofMillis(100), Duration.ofMillis(100)).withJitter(0)));
        outbox = outbox(relay);
        transport.failWhen(r -> r.eventType().equals("Flaky"), SendResult.Kind.RETRIABLE);
        List<UUID> ids = write(outbox, event("k1", "Flaky"), event("k1", "After"), event("k2", "Fine"));
        transport.awaitDelivered(ids.get(2), WAIT);
        OutboxAdmin admin = OutboxAdmin.create(adminSessions, schema);
        await().atMost(WAIT).until(() -> admin.parkedKeys(10).size() == 1);
        assertThat(admin.parkedKeys(10).get(0).attempts()).isEqualTo(3);
        assertThat(transport.delivered()).extracting(OutboxRecord::eventId).doesNotContain(ids.get(1));
    }

    @Test
    void a_transport_outage_backs_off_without_parking_and_everything_goes_out_after() throws Exception {
        PollingRelay relay = start(relay().retry(RetryPolicy.defaults().withMaxAttempts(2))
                .outageBackoffMax(Duration.ofMillis(300)));
        outbox = outbox(relay);
        transport.goDown();
        List<UUID> ids = new ArrayList<>();
        for (int i = 0; i < 20; i++) {
            ids.addAll(write(outbox, event("k" + (i % 4), "E" + i)));
        }
        OutboxAdmin admin = OutboxAdmin.create(adminSessions, schema);
        // the outage is visible on the rows, and nothing is parked even with maxAttempts=2
        await().atMost(WAIT).until(() -> db.queryLong("SELECT count(*) FROM " + schema.qualifiedOutboxTable()
                + " WHERE last_error LIKE 'transport unavailable%' AND next_attempt_at IS NOT NULL") >= 2);
        long batchesDuringOutage = transport.batchSizes().size();
        assertThat(admin.parkedKeys(10)).isEmpty();
        transport.comeUp();
        transport.awaitDelivered(r -> true, 20, WAIT);
        DeliveredEvents d = DeliveredEvents.of(transport.delivered()).assertNoDuplicates();
        for (int k = 0; k < 4; k++) {
            List<String> expected = new ArrayList<>();
            for (int i = k; i < 20; i += 4) {
                expected.add("E" + i);
            }
            d.assertKeyOrder("k" + k, expected.toArray(new String[0]));
        }
        assertThat(admin.parkedKeys(10)).isEmpty();
        assertThat(batchesDuringOutage).as("backing off, not spinning").isLessThan(200);
    }

    @Test
    void a_second_relay_takes_its_fair_share_and_everything_when_the_first_closes() throws Exception {
        PollingRelay first = start(relay().lanes(4).leaseTimeout(Duration.ofSeconds(3)));
        await().atMost(WAIT).until(() -> first.stats().lanesOwned() == 4);
        // the relay owns (and closes) its transport: the second instance gets its own
        InMemoryTransport secondTransport = new InMemoryTransport();
        PollingRelay second = start(relay().lanes(4).leaseTimeout(Duration.ofSeconds(3)).transport(secondTransport));
        await().atMost(WAIT).until(() -> first.stats().lanesOwned() == 2 && second.stats().lanesOwned() == 2);
        outbox = Outbox.builder().schema(schema).afterPublish(() -> {
            first.nudge();
            second.nudge();
        }).build();
        List<UUID> before = new ArrayList<>();
        for (int i = 0; i < 40; i++) {
            before.addAll(write(outbox, event("k" + i, "E1")));
        }
        await().atMost(WAIT).until(() -> first.stats().published() + second.stats().published() == 40);
        assertThat(first.stats().published()).as("both instances worked").isPositive();
        assertThat(second.stats().published()).isPositive();
        first.close();
        await().atMost(WAIT).until(() -> second.stats().lanesOwned() == 4);
        UUID after = write(outbox, event("k1", "E2")).get(0);
        secondTransport.awaitDelivered(after, WAIT);
        DeliveredEvents.of(transport.delivered()).assertNoDuplicates();
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
        outbox = Outbox.builder().schema(schema).afterPublish(two::nudge).build();
        for (int i = 0; i < 50; i++) {
            write(outbox, event("k" + i, "E"));
        }
        transport.awaitDelivered(r -> true, 50, WAIT);
        assertThat(four.stats().lanesOwned()).as("lanes 2 and 3 exist only in the 4-lane relay").isZero();
        assertThat(four.stats().published()).isZero();
    }

    @Test
    void many_writers_with_random_failures_lose_nothing_and_keep_per_key_order() throws Exception {
        PollingRelay relay = start(relay().lanes(2).batchSize(200)
                .retry(RetryPolicy.defaults().withMaxAttempts(1000).withBackoff(Duration.ofMillis(5),
                        Duration.ofMillis(50))));
        outbox = outbox(relay);
        Random random = new Random(7);
        transport.failWhen(r -> random.nextInt(50) == 0, SendResult.Kind.RETRIABLE);
        String ledgerSchema = db.schema();
        try (LedgerWriter writer = LedgerWriter.builder(db.dataSource(), ledgerSchema).threads(8).keys(100)
                .events(5_000).rollbackShare(0.05)
                .eventInserter((c, eventId, key, seq) -> outbox.publish(c, OutboxMessage.builder().eventId(eventId)
                        .topic("ledger").aggregate("Key", key).eventType("Seq" + seq).jsonPayload("{}").build()))
                .build().start()) {
            assertThat(writer.awaitDone(Duration.ofMinutes(2))).isTrue();
            assertThat(writer.errors()).isEmpty();
        }
        List<io.txoutbox.testing.history.LedgerEntry> ledger = Ledger.read(db.dataSource(), ledgerSchema);
        await().atMost(Duration.ofMinutes(1)).until(() -> transport.delivered("ledger").stream()
                .map(OutboxRecord::eventId).distinct().count() >= ledger.size());
        List<Delivery> deliveries = new ArrayList<>();
        long offset = 0;
        for (OutboxRecord r : transport.delivered("ledger")) {
            deliveries.add(new Delivery(r.eventId(), r.key(), 0, offset++, System.currentTimeMillis()));
        }
        HistoryReport report = HistoryChecker.check(ledger, deliveries);
        HistoryAssert.assertThat(report).isClean();
        assertThat(report.committed()).isGreaterThan(4_000);
    }

    @Test
    void a_batch_stops_growing_at_max_batch_bytes_but_always_takes_one_event() throws Exception {
        outbox = Outbox.builder().schema(schema).build();
        String big = "{\"blob\":\"" + "x".repeat(400) + "\"}";
        for (int i = 0; i < 10; i++) {
            write(outbox, event("k" + i, "E").toBuilder().jsonPayload(big).build());
        }
        start(relay().lanes(1).batchSize(100).maxBatchBytes(1_000));
        transport.awaitDelivered(r -> true, 10, WAIT);
        assertThat(transport.batchSizes()).allSatisfy(size -> assertThat(size).isBetween(1, 3));
    }

    @Test
    void close_is_idempotent_and_bounded() {
        PollingRelay relay = start(relay());
        await().atMost(WAIT).until(() -> relay.stats().lanesOwned() == 2);
        long t0 = System.nanoTime();
        relay.close();
        relay.close();
        assertThat(TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - t0)).isLessThan(10);
        assertThat(relay.stats().lanesOwned()).isZero();
    }
}
