package io.txoutbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.groups.Tuple.tuple;
import static org.awaitility.Awaitility.await;

import io.txoutbox.testing.postgres.PostgresExtension;
import io.txoutbox.testing.postgres.TestDatabase;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The inbox's operator verbs (the outbox's, per consumer) against a real PostgreSQL: lists, filters and pages on rows
 * written with SQL; requeue, discard and skip with a running inbox worker, which must resume, move on or leave alone
 * the key as each verb says.
 */
class InboxAdminIT {

    @RegisterExtension
    static final PostgresExtension postgres = new PostgresExtension();

    private static final Duration AWAIT = Duration.ofMinutes(2);
    /** One failed attempt parks the key (or, with DEAD_LETTER_AND_CONTINUE, gives the event up). */
    private static final RetryPolicy ONCE = RetryPolicy.defaults().withMaxAttempts(1)
            .withBackoff(Duration.ofMillis(50), Duration.ofMillis(200));

    private static OutboxSchema schema;
    private TestDatabase db;
    private InboxAdmin admin;
    private String consumer;
    private Instant dbNow;

    @BeforeAll
    static void migrate() {
        schema = OutboxSchema.builder().schema(postgres.database().schema()).build();
        schema.migrate(postgres.database().dataSource());
    }

    @BeforeEach
    void setUp() {
        db = postgres.database();
        admin = InboxAdmin.create(db.dataSource(), schema);
        consumer = "adm-" + UUID.randomUUID();
        dbNow = Instant.ofEpochMilli(db.queryLong("SELECT (extract(epoch FROM now()) * 1000)::bigint"));
    }

    /** One inbox row of {@code consumerName}; returns its event id. */
    private UUID row(String consumerName, String state, String topic, String type, String key, String receivedAgo,
            String failedAgo) {
        UUID id = UUID.randomUUID();
        db.execute("INSERT INTO inbox_event (consumer, event_id, source_topic, partition_key, event_type, payload,"
                + " state, attempts, last_error, received_at, failed_at) VALUES ('" + consumerName + "', '" + id
                + "', '" + topic + "', '" + key + "', '" + type + "', convert_to('{\"secret\": 1}', 'UTF8'), '" + state
                + "', 3, 'boom', now() - interval '" + receivedAgo + "', "
                + (failedAgo == null ? "NULL" : "now() - interval '" + failedAgo + "'") + ")");
        return id;
    }

    private UUID row(String state, String topic, String type, String key, String receivedAgo, String failedAgo) {
        return row(consumer, state, topic, type, key, receivedAgo, failedAgo);
    }

    private String col(UUID eventId, String column) {
        try (var c = db.connect(); var ps = c.prepareStatement("SELECT " + column + "::text FROM inbox_event"
                + " WHERE consumer = ? AND event_id = ?")) {
            ps.setString(1, consumer);
            ps.setObject(2, eventId);
            try (var rs = ps.executeQuery()) {
                return rs.next() ? rs.getString(1) : "<gone>";
            }
        } catch (java.sql.SQLException e) {
            throw new IllegalStateException(e);
        }
    }

    private String currentUser() {
        try (var c = db.connect(); var st = c.createStatement(); var rs = st.executeQuery("SELECT current_user")) {
            rs.next();
            return rs.getString(1);
        } catch (java.sql.SQLException e) {
            throw new IllegalStateException(e);
        }
    }

    private static List<UUID> ids(List<FailedEvent> events) {
        return events.stream().map(FailedEvent::eventId).toList();
    }

    private EventFilter dead() {
        return EventFilter.dead().consumer(consumer);
    }

    private EventFilter parked() {
        return EventFilter.parked().consumer(consumer);
    }

    @Test
    void filters_select_by_consumer_state_topic_type_key_and_time_and_pages_follow_the_id() {
        UUID d1 = row("DEAD", "orders", "OrderCreated", "k1", "3 days", "2 days");
        UUID d2 = row("DEAD", "orders", "OrderPaid", "k2", "1 hour", "30 minutes");
        UUID d3 = row("DEAD", "payments", "OrderCreated", "k1", "1 hour", "10 minutes");
        UUID p1 = row("PARKED", "orders", "OrderCreated", "k3", "2 hours", "1 hour");
        UUID x1 = row("DISCARDED", "orders", "OrderCreated", "k6", "2 hours", "1 hour");
        row("PENDING", "orders", "OrderCreated", "k4", "1 hour", null);
        row("PROCESSED", "orders", "OrderCreated", "k5", "1 hour", null);
        row("other-" + consumer, "DEAD", "orders", "OrderCreated", "k1", "1 hour", "10 minutes");

        assertThat(ids(admin.list(dead(), 0, 100))).as("this consumer's only").containsExactly(d1, d2, d3);
        assertThat(ids(admin.list(parked(), 0, 100))).containsExactly(p1);
        assertThat(ids(admin.list(EventFilter.of(EnumSet.of(FailedState.DISCARDED)).consumer(consumer), 0, 100)))
                .containsExactly(x1);
        assertThat(ids(admin.list(EventFilter.deadOrParked().consumer(consumer).topic("orders"), 0, 100)))
                .as("topic is the source topic").containsExactly(d1, d2, p1);
        assertThat(ids(admin.list(dead().eventType("OrderCreated"), 0, 100))).containsExactly(d1, d3);
        assertThat(ids(admin.list(dead().key("k1").topic("payments"), 0, 100))).containsExactly(d3);
        Instant dayAgo = dbNow.minus(Duration.ofDays(1));
        assertThat(ids(admin.list(dead().createdBefore(dayAgo), 0, 100))).as("created is received_at")
                .containsExactly(d1);
        assertThat(ids(admin.list(dead().createdFrom(dayAgo), 0, 100))).containsExactly(d2, d3);
        assertThat(ids(admin.list(dead().failedFrom(dbNow.minus(Duration.ofMinutes(20))), 0, 100)))
                .containsExactly(d3);
        assertThat(ids(admin.list(dead().failedFrom(dayAgo).failedBefore(dbNow.minus(Duration.ofMinutes(20))), 0,
                100))).containsExactly(d2);

        // keyset pages: no gap, no overlap
        EventFilter all = EventFilter.of(EnumSet.allOf(FailedState.class)).consumer(consumer);
        List<FailedEvent> page1 = admin.list(all, 0, 2);
        List<FailedEvent> page2 = admin.list(all, page1.get(1).id(), 2);
        List<FailedEvent> page3 = admin.list(all, page2.get(1).id(), 2);
        assertThat(ids(page1)).containsExactly(d1, d2);
        assertThat(ids(page2)).containsExactly(d3, p1);
        assertThat(ids(page3)).containsExactly(x1);
        assertThat(admin.list(all, page3.get(0).id(), 2)).isEmpty();
        FailedEvent first = page1.get(0);
        assertThat(first.consumer()).isEqualTo(consumer);
        assertThat(first.state()).isEqualTo(FailedState.DEAD);
        assertThat(first.topic()).isEqualTo("orders");
        assertThat(first.key()).isEqualTo("k1");
        assertThat(first.lastError()).isEqualTo("boom");
        assertThat(first.attempts()).isEqualTo(3);
        assertThat(first.failedAt()).isNotNull();
        assertThat(first.createdAt()).isBefore(dayAgo);
        assertThat(first.operatorAction()).isNull();
        assertThat(first.waiting()).isZero();
    }

    @Test
    void show_gives_the_metadata_and_the_payload_only_when_asked() {
        UUID d = row("DEAD", "orders", "OrderCreated", "k1", "1 hour", "1 minute");
        EventDetails meta = admin.show(consumer, d, false).orElseThrow();
        assertThat(meta.eventId()).isEqualTo(d);
        assertThat(meta.consumer()).isEqualTo(consumer);
        assertThat(meta.state()).isEqualTo("DEAD");
        assertThat(meta.topic()).isEqualTo("orders");
        assertThat(meta.key()).isEqualTo("k1");
        assertThat(meta.eventType()).isEqualTo("OrderCreated");
        assertThat(meta.lastError()).isEqualTo("boom");
        assertThat(meta.headersJson()).isEqualTo("{}");
        assertThat(meta.createdAt()).isBefore(dbNow.minus(Duration.ofMinutes(30)));
        assertThat(meta.failedAt()).isNotNull();
        assertThat(meta.completedAt()).as("never processed").isNull();
        assertThat(meta.payload()).isNull();
        byte[] payload = admin.show(consumer, d, true).orElseThrow().payload();
        assertThat(new String(payload, StandardCharsets.UTF_8)).isEqualTo("{\"secret\": 1}");
        assertThat(admin.show(consumer, UUID.randomUUID(), true)).isEmpty();
        assertThat(admin.show("other-" + consumer, d, true)).as("another consumer's view").isEmpty();
    }

    @Test
    void a_parked_head_lists_the_events_of_its_key_that_wait_behind_it() {
        UUID head = row("PARKED", "orders", "E", "k1", "1 hour", "1 minute");
        row("PENDING", "orders", "E", "k1", "1 hour", null);
        row("PENDING", "orders", "E", "k1", "1 hour", null);
        row("PENDING", "orders", "E", "k2", "1 hour", null);
        row("PROCESSED", "orders", "E", "k1", "1 hour", null);
        row("other-" + consumer, "PENDING", "orders", "E", "k1", "1 hour", null);
        UUID alone = row("PARKED", "orders", "E", "k3", "1 hour", "1 minute");
        assertThat(admin.list(parked(), 0, 10)).extracting(FailedEvent::eventId, FailedEvent::waiting)
                .containsExactly(tuple(head, 2L), tuple(alone, 0L));
    }

    @Test
    void filter_verbs_change_only_matching_rows_across_many_pages_and_audit_them() {
        db.execute("INSERT INTO inbox_event (consumer, event_id, source_topic, partition_key, event_type, state)"
                + " SELECT '" + consumer + "', gen_random_uuid(), CASE WHEN g % 2 = 0 THEN 'orders' ELSE 'payments'"
                + " END, 'k' || g, 'E', 'DEAD' FROM generate_series(1, 2500) g");
        UUID parkedOrder = row("PARKED", "orders", "E", "kp", "1 hour", "1 minute");
        UUID otherConsumers = row("other-" + consumer, "DEAD", "orders", "E", "k1", "1 hour", "1 minute");

        assertThat(admin.requeue(dead().topic("orders"), "dave")).isEqualTo(1250);
        assertThat(db.queryLong("SELECT count(*) FROM inbox_event WHERE consumer = '" + consumer + "' AND state ="
                + " 'PENDING' AND source_topic = 'orders' AND operator_name = 'dave' AND operator_action = 'REQUEUED'"
                + " AND attempts = 0 AND operator_at > now() - interval '1 minute'")).isEqualTo(1250);
        assertThat(db.queryLong("SELECT count(*) FROM inbox_event WHERE consumer = '" + consumer + "' AND state ="
                + " 'DEAD' AND source_topic = 'payments' AND operator_action IS NULL")).isEqualTo(1250);
        assertThat(col(parkedOrder, "state")).isEqualTo("PARKED");

        assertThat(admin.discard(EventFilter.deadOrParked().consumer(consumer), "erin")).isEqualTo(1251);
        assertThat(db.queryLong("SELECT count(*) FROM inbox_event WHERE consumer = '" + consumer + "' AND state ="
                + " 'DISCARDED' AND operator_name = 'erin' AND operator_action = 'DISCARDED'")).isEqualTo(1251);
        assertThat(admin.pendingCount(consumer)).isEqualTo(1250);
        assertThat(admin.requeue(dead(), "erin")).as("discarded rows are final").isZero();
        assertThat(admin.list(EventFilter.dead().consumer("other-" + consumer), 0, 10)).extracting(FailedEvent::eventId)
                .as("another consumer's rows are untouched").containsExactly(otherConsumers);
    }

    @Test
    void single_verbs_change_only_rows_in_the_expected_state_and_null_records_the_database_user() {
        UUID dead = row("DEAD", "orders", "E", "k1", "1 hour", "1 minute");
        UUID parked = row("PARKED", "orders", "E", "k2", "1 hour", "1 minute");
        UUID processed = row("PROCESSED", "orders", "E", "k3", "1 hour", null);
        assertThat(admin.skip(consumer, dead, "x")).as("only a parked event is skipped").isFalse();
        assertThat(admin.requeue(consumer, processed, "x")).isFalse();
        assertThat(admin.discard(consumer, processed, "x")).isFalse();
        assertThat(admin.requeue("other-" + consumer, dead, "x")).as("another consumer's event").isFalse();
        assertThat(col(processed, "operator_action")).isNull();

        assertThat(admin.skip(consumer, parked, null)).isTrue();
        assertThat(col(parked, "state")).isEqualTo("DEAD");
        assertThat(col(parked, "operator_action")).isEqualTo("SKIPPED");
        assertThat(col(parked, "operator_name")).isEqualTo(currentUser());
        assertThat(col(parked, "last_error")).contains("skipped by an operator");
        assertThat(admin.requeue(consumer, dead, "alice")).isTrue();
        assertThat(admin.requeue(consumer, dead, "alice")).as("already pending").isFalse();
        assertThat(col(dead, "attempts")).isEqualTo("0");
        assertThat(col(dead, "next_attempt_at")).as("due at once").isNull();
    }

    private static InboxMessage message(String key, int seq) {
        return InboxMessage.builder(UUID.randomUUID()).key(key).eventType("Seq")
                .payload(Integer.toString(seq).getBytes(StandardCharsets.UTF_8)).build();
    }

    private void receive(List<InboxMessage> messages) throws Exception {
        try (Connection c = db.connect()) {
            c.setAutoCommit(false);
            Inbox.create(schema).receive(c, consumer, messages);
            c.commit();
        }
    }

    /** {@code n} events of key {@code k}, received; returns them in order. */
    private List<InboxMessage> receiveKey(String k, int n) throws Exception {
        List<InboxMessage> messages = new ArrayList<>();
        for (int seq = 1; seq <= n; seq++) {
            messages.add(message(k, seq));
        }
        receive(messages);
        return messages;
    }

    /** A worker whose handler records each event as key#seq in {@code handled} and fails those in {@code failing}. */
    private InboxWorker worker(FailurePolicy policy, List<String> handled, Set<UUID> failing) {
        return InboxWorker.builder().dataSource(db.dataSource()).schema(schema).consumer(consumer)
                .pollInterval(Duration.ofMillis(20)).retry(ONCE).failurePolicy(policy)
                .handler("Seq", (c, e) -> {
                    if (failing.contains(e.eventId())) {
                        throw new IllegalStateException("downstream says no");
                    }
                    handled.add(e.key() + "#" + e.payloadAsString());
                }).build().start();
    }

    @Test
    void requeue_resumes_a_parked_key_in_order_and_the_worker_records_when_it_parked() throws Exception {
        List<InboxMessage> k = receiveKey("k", 4);
        UUID head = k.get(0).eventId();
        List<String> handled = new CopyOnWriteArrayList<>();
        Set<UUID> failing = ConcurrentHashMap.newKeySet();
        failing.add(head);
        try (InboxWorker worker = worker(FailurePolicy.PARK_KEY, handled, failing)) {
            await().atMost(AWAIT).until(() -> admin.list(parked(), 0, 10).size() == 1);
            FailedEvent parked = admin.list(parked(), 0, 10).get(0);
            assertThat(parked.eventId()).isEqualTo(head);
            assertThat(parked.waiting()).isEqualTo(3);
            assertThat(parked.failedAt()).as("set by the worker").isNotNull();
            assertThat(admin.list(parked().failedFrom(dbNow.minus(Duration.ofMinutes(1))), 0, 10)).hasSize(1);
            assertThat(handled).as("the key waits").isEmpty();

            failing.clear();
            assertThat(admin.requeue(consumer, head, "alice")).isTrue();
            worker.nudge();
            await().atMost(AWAIT).until(() -> handled.size() == 4);
        }
        assertThat(handled).containsExactly("k#1", "k#2", "k#3", "k#4");
        EventDetails done = admin.show(consumer, head, false).orElseThrow();
        assertThat(done.state()).isEqualTo("PROCESSED");
        assertThat(done.completedAt()).isNotNull();
        assertThat(done.operatorAction()).isEqualTo("REQUEUED");
        assertThat(done.operatorName()).isEqualTo("alice");
    }

    @Test
    void a_requeued_dead_event_is_processed_again_after_its_key_moved_on() throws Exception {
        List<InboxMessage> k = receiveKey("k", 3);
        UUID poison = k.get(1).eventId();
        List<String> handled = new CopyOnWriteArrayList<>();
        Set<UUID> failing = ConcurrentHashMap.newKeySet();
        failing.add(poison);
        try (InboxWorker worker = worker(FailurePolicy.DEAD_LETTER_AND_CONTINUE, handled, failing)) {
            await().atMost(AWAIT).until(() -> handled.size() == 2);
            assertThat(ids(admin.list(dead(), 0, 10))).containsExactly(poison);
            assertThat(admin.list(dead(), 0, 10).get(0).failedAt()).isNotNull();
            failing.clear();
            assertThat(admin.requeue(dead(), "bob")).isEqualTo(1);
            worker.nudge();
            await().atMost(AWAIT).until(() -> handled.size() == 3);
        }
        assertThat(handled).containsExactly("k#1", "k#3", "k#2");
        assertThat(admin.list(dead(), 0, 10)).isEmpty();
    }

    @Test
    void discard_is_final_its_key_moves_on_and_purge_keeps_it() throws Exception {
        List<InboxMessage> k = receiveKey("k", 3);
        UUID head = k.get(0).eventId();
        List<String> handled = new CopyOnWriteArrayList<>();
        Set<UUID> failing = ConcurrentHashMap.newKeySet();
        failing.add(head);
        try (InboxWorker worker = worker(FailurePolicy.PARK_KEY, handled, failing)) {
            await().atMost(AWAIT).until(() -> admin.list(parked(), 0, 10).size() == 1);
            assertThat(admin.discard(consumer, head, "carol")).isTrue();
            worker.nudge();
            await().atMost(AWAIT).until(() -> handled.size() == 2);
            assertThat(admin.requeue(consumer, head, "carol")).as("final").isFalse();
            assertThat(admin.discard(consumer, head, "carol")).isFalse();
        }
        assertThat(handled).containsExactly("k#2", "k#3");
        assertThat(col(head, "state")).isEqualTo("DISCARDED");
        assertThat(col(head, "operator_action")).isEqualTo("DISCARDED");
        assertThat(col(head, "operator_name")).isEqualTo("carol");
        assertThat(col(head, "processed_at")).isNull();
        assertThat(admin.pendingCount(consumer)).isZero();
        assertThat(admin.backlog()).as("a discarded row is neither pending, parked nor dead")
                .noneMatch(b -> b.consumer().equals(consumer));
        InboxAdmin.Purged purged = admin.purge(Duration.ZERO, Duration.ZERO, 1_000);
        assertThat(purged.inboxEvents()).isGreaterThanOrEqualTo(2);
        assertThat(col(head, "state")).as("never purged").isEqualTo("DISCARDED");
    }

    @Test
    void skip_makes_the_parked_head_dead_and_its_key_moves_on() throws Exception {
        List<InboxMessage> k = receiveKey("k", 3);
        UUID head = k.get(0).eventId();
        List<String> handled = new CopyOnWriteArrayList<>();
        Set<UUID> failing = ConcurrentHashMap.newKeySet();
        failing.add(head);
        try (InboxWorker worker = worker(FailurePolicy.PARK_KEY, handled, failing)) {
            await().atMost(AWAIT).until(() -> admin.list(parked(), 0, 10).size() == 1);
            assertThat(admin.skip(consumer, head, "dave")).isTrue();
            worker.nudge();
            await().atMost(AWAIT).until(() -> handled.size() == 2);
            assertThat(admin.skip(consumer, head, "dave")).as("no longer parked").isFalse();
        }
        assertThat(handled).containsExactly("k#2", "k#3");
        assertThat(admin.list(dead(), 0, 10)).extracting(FailedEvent::eventId, FailedEvent::operatorAction,
                FailedEvent::operatorName).containsExactly(tuple(head, "SKIPPED", "dave"));
        assertThat(admin.list(parked(), 0, 10)).isEmpty();
    }

    @Test
    void bad_arguments_are_refused_with_the_fix() {
        UUID dead = row("DEAD", "orders", "E", "k1", "1 hour", "1 minute");
        assertThatThrownBy(() -> admin.list(EventFilter.dead(), 0, 10)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("InboxAdmin.list needs the filter's consumer")
                .hasMessageContaining(".consumer(name)");
        assertThatThrownBy(() -> admin.requeue(EventFilter.dead(), "x")).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("InboxAdmin.requeue needs the filter's consumer");
        assertThatThrownBy(() -> admin.discard(EventFilter.deadOrParked(), "x"))
                .hasMessageContaining("InboxAdmin.discard needs the filter's consumer");
        assertThatThrownBy(() -> admin.list(dead(), 0, 0)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("limit must be between 1 and 10000, was 0");
        assertThatThrownBy(() -> admin.list(dead(), 0, 10_001)).hasMessageContaining("was 10001");
        assertThatThrownBy(() -> admin.requeue(EventFilter.of(EnumSet.of(FailedState.DISCARDED)).consumer(consumer),
                "x")).hasMessageContaining("applies to PARKED or DEAD events");
        assertThatThrownBy(() -> admin.requeue(null, dead, "x")).isInstanceOf(InvalidConfigurationException.class)
                .hasMessageContaining("inboxAdmin.consumer");
        assertThatThrownBy(() -> admin.requeue(consumer, dead, " ")).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("operator must name who makes the change");
        assertThat(col(dead, "state")).isEqualTo("DEAD");
    }
}
