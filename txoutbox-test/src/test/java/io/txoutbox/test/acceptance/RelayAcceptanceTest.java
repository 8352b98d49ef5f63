package io.txoutbox.test.acceptance;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.txoutbox.EventFilter;
import io.txoutbox.FailedEvent;
import io.txoutbox.FailurePolicy;
import io.txoutbox.Outbox;
import io.txoutbox.OutboxAdmin;
import io.txoutbox.OutboxMessage;
import io.txoutbox.OutboxSchema;
import io.txoutbox.OutboxStatus;
import io.txoutbox.PollingRelay;
import io.txoutbox.RetryPolicy;
import io.txoutbox.internal.progress.ProgressModel;
import io.txoutbox.internal.progress.ProgressModels;
import io.txoutbox.spi.OutboxRecord;
import io.txoutbox.spi.Transport;
import io.txoutbox.testing.history.Delivery;
import io.txoutbox.testing.history.HistoryAssert;
import io.txoutbox.testing.history.HistoryChecker;
import io.txoutbox.testing.history.Ledger;
import io.txoutbox.testing.history.LedgerEntry;
import io.txoutbox.testing.history.LedgerWriter;
import io.txoutbox.testing.postgres.PostgresExtension;
import io.txoutbox.testing.postgres.TestDatabase;
import java.sql.Connection;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Predicate;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The scenarios every relay and transport must pass, written once: the polling relay on a real PostgreSQL with the
 * subclass's transport. The test methods are {@code final}; a subclass supplies the transport and the means to read
 * back what it delivered and to make it reject a record (the fixture methods below), and declares what its transport
 * cannot do ({@link #lacks}) — such a scenario is skipped with the reason, never silently dropped. Retriable send
 * failures are injected by the suite itself, in front of the subclass's transport ({@link FaultInjectingTransport}).
 *
 * <p>Waits are on conditions (the relay's counters, the table, the read-back), never sleeps. Subclasses that start
 * something expensive (a broker) share it per class.
 */
public abstract class RelayAcceptanceTest {

    @RegisterExtension
    protected static final PostgresExtension postgres = new PostgresExtension();

    protected static final Duration WAIT = Duration.ofSeconds(60);

    /** What a scenario may need beyond sending; see {@link #lacks}. */
    protected enum Capability {
        /** The broker can be taken down and brought back within a test ({@link #brokerDown()}). */
        BROKER_OUTAGE
    }

    private TestDatabase db;
    private DataSource sessions;
    private DataSource relaySessions;
    private DataSource adminSessions;
    private OutboxSchema schema;
    private String topic;
    private final List<PollingRelay> relays = new ArrayList<>();
    private final List<FaultInjectingTransport> transports = new CopyOnWriteArrayList<>();
    private final List<Predicate<OutboxRecord>> faults = new CopyOnWriteArrayList<>();
    private final List<LedgerEntry> written = new CopyOnWriteArrayList<>();
    private final Map<String, AtomicInteger> seqs = new HashMap<>();

    // --- the fixture: what a subclass supplies ---

    /** A new transport for one relay instance; the relay owns it and closes it. */
    protected abstract Transport newTransport();

    /** A new topic for one scenario, ready to receive (created where the transport needs it). */
    protected abstract String newTopic();

    /** A dead-letter topic for {@code topic}, ready to receive. */
    protected abstract String newDeadLetterTopic(String topic);

    /**
     * What was delivered to {@code topic}, read back once at least {@code atLeast} distinct events are there (or at
     * {@link #WAIT}, with what there is): each key's records in the order it received them.
     */
    protected abstract List<Sent> delivered(String topic, int atLeast);

    /** Makes the message one the transport rejects permanently (Kafka: larger than the topic accepts). */
    protected abstract OutboxMessage.Builder poison(OutboxMessage.Builder message);

    /** From now on the transport accepts the poison of {@code topic} (an operator fixed the cause). */
    protected abstract void curePoison(String topic);

    /** A piece of the error the transport reports for a poison record, as it appears in {@code last_error}. */
    protected abstract String poisonError();

    /** Why the transport cannot do {@code capability} here, or empty if it can (the default). */
    protected Optional<String> lacks(Capability capability) {
        return Optional.empty();
    }

    /** Takes the broker down: every send fails as unavailable. Needs {@link Capability#BROKER_OUTAGE}. */
    protected void brokerDown() {
        throw new UnsupportedOperationException("brokerDown");
    }

    /** Brings the broker back. Needs {@link Capability#BROKER_OUTAGE}. */
    protected void brokerUp() {
        throw new UnsupportedOperationException("brokerUp");
    }

    /**
     * The progress model of the scenario's table ({@code schema.progress}, docs/progress-models.md): by default the
     * row-state model. A subclass returns another to run every scenario on that one.
     */
    protected OutboxSchema.Progress progress() {
        return OutboxSchema.Progress.ROW_STATE;
    }

    /**
     * How many of the scenario's rows the relay recorded as published, as its progress model records them. Row
     * state: PUBLISHED with a {@code published_at} (one UPDATE per row). Cursor: PUBLISHED, or fresh at or below its
     * shard's cursor, read once every fresh row is under its cursor — the cursor follows the deliveries by a
     * settlement or two (about 100–300 ms).
     */
    protected long publishedRows() {
        if (schema.progress() == OutboxSchema.Progress.ROW_STATE) {
            return count("state = 'PUBLISHED' AND published_at IS NOT NULL");
        }
        ProgressModel model = ProgressModels.of(schema);
        String t = schema.qualifiedOutboxTable();
        await().atMost(WAIT).until(() -> db.queryLong("SELECT count(*) FROM " + t + " o WHERE " + model.pending("o")
                + " AND o.state = 'PENDING' AND o.next_attempt_at IS NULL") == 0);
        return db.queryLong("SELECT count(*) FROM " + t + " o WHERE " + model.published("o"));
    }

    /**
     * The relation (a table, or a parenthesised query to alias) that holds every row of the scenario, whatever its
     * state: by default the outbox table. A subclass whose progress model moves rows elsewhere adds them.
     */
    protected String everyRow() {
        return schema.qualifiedOutboxTable();
    }

    /** Where the relay, the admin and the migration take their connections (the writers use the database's). */
    protected DataSource sessions(TestDatabase db) {
        return db.dataSource();
    }

    /** Where the relay takes its connections, once the table exists; by default {@link #sessions}. */
    protected DataSource relaySessions(TestDatabase db, OutboxSchema schema) {
        return sessions;
    }

    /**
     * Where {@code OutboxAdmin} and the status reads take their connections, once the table exists; by default
     * {@link #sessions}.
     */
    protected DataSource adminSessions(TestDatabase db, OutboxSchema schema) {
        return sessions;
    }

    // --- what scenarios (here and in transport-specific subclasses) build on ---

    @BeforeEach
    final void setUpScenario(TestInfo info) {
        db = postgres.database();
        sessions = sessions(db);
        String name = info.getTestMethod().orElseThrow().getName();
        schema = OutboxSchema.builder().schema(db.schema()).outboxTable("ob_" + Math.abs(name.hashCode())).shards(8)
                .progress(progress()).build();
        schema.migrate(sessions);
        relaySessions = relaySessions(db, schema);
        adminSessions = adminSessions(db, schema);
        topic = newTopic();
    }

    @AfterEach
    final void closeRelays() {
        relays.forEach(PollingRelay::close);
    }

    protected final TestDatabase db() {
        return db;
    }

    protected final OutboxSchema schema() {
        return schema;
    }

    protected final String topic() {
        return topic;
    }

    protected final OutboxAdmin admin() {
        return OutboxAdmin.create(adminSessions, schema);
    }

    /** A relay on this scenario's table with a new transport of the subclass, behind the suite's fault injection. */
    protected final PollingRelay.Builder relay() {
        FaultInjectingTransport transport = new FaultInjectingTransport(newTransport(),
                r -> faults.stream().anyMatch(f -> f.test(r)));
        transports.add(transport);
        return PollingRelay.builder().dataSource(relaySessions).schema(schema).transport(transport).lanes(2)
                .name("acc-" + UUID.randomUUID().toString().substring(0, 6)).batchSize(100)
                .pollInterval(Duration.ofMillis(50))
                .retry(RetryPolicy.defaults().withBackoff(Duration.ofMillis(50), Duration.ofMillis(200)));
    }

    protected final PollingRelay start(PollingRelay.Builder builder) {
        PollingRelay r = builder.build();
        relays.add(r);
        r.start();
        return r;
    }

    /** An outbox that nudges the relay after every commit. */
    protected final Outbox outbox(PollingRelay relay) {
        return Outbox.builder().schema(schema).afterPublish(relay::nudge).build();
    }

    protected final OutboxMessage message(String key, String type) {
        return builder(key, type).build();
    }

    private OutboxMessage.Builder builder(String key, String type) {
        return OutboxMessage.builder().topic(topic).aggregate("Order", key).eventType(type)
                .jsonPayload("{\"type\":\"" + type + "\"}");
    }

    /** Publishes in one committed transaction; the events join the ledger the scenario's history is checked by. */
    protected final List<UUID> write(Outbox outbox, OutboxMessage... messages) throws Exception {
        try (Connection c = db.connect()) {
            c.setAutoCommit(false);
            List<UUID> ids = outbox.publish(c, messages);
            c.commit();
            for (int i = 0; i < messages.length; i++) {
                String key = messages[i].key();
                int seq = seqs.computeIfAbsent(key, k -> new AtomicInteger()).incrementAndGet();
                written.add(new LedgerEntry(ids.get(i), key, seq, Instant.now()));
            }
            return ids;
        }
    }

    /** Fails matching records retriably before they reach the transport, until the returned action runs. */
    protected final Runnable failRetriably(Predicate<OutboxRecord> which) {
        faults.add(which);
        return () -> faults.remove(which);
    }

    private long injected() {
        return transports.stream().mapToLong(FaultInjectingTransport::injected).sum();
    }

    private List<Integer> batchSizes() {
        return transports.stream().flatMap(t -> t.batchSizes().stream()).toList();
    }

    private void requires(Capability capability) {
        Optional<String> reason = lacks(capability);
        Assumptions.assumeTrue(reason.isEmpty(),
                () -> getClass().getSimpleName() + " skips this scenario, it lacks " + capability + ": "
                        + reason.orElseThrow());
    }

    /** The key's first deliveries, in order. */
    private static List<UUID> firstDeliveries(List<Sent> sent, String key) {
        Set<UUID> seen = new HashSet<>();
        return sent.stream().filter(s -> key.equals(s.key()) && seen.add(s.eventId())).map(Sent::eventId).toList();
    }

    /** Everything {@link #write written} reached the topic once, each key in order. */
    private void assertHistoryClean(List<LedgerEntry> ledger) {
        List<Sent> sent = delivered(topic, ledger.size());
        List<Delivery> deliveries = new ArrayList<>();
        for (int i = 0; i < sent.size(); i++) {
            deliveries.add(new Delivery(sent.get(i).eventId(), sent.get(i).key(), 0, i, 0));
        }
        HistoryAssert.assertThat(HistoryChecker.check(ledger, deliveries)).isClean().hasNoDuplicates();
    }

    private long count(String where) {
        return db.queryLong("SELECT count(*) FROM " + schema.qualifiedOutboxTable() + " WHERE " + where);
    }

    // --- the scenarios ---

    @Test
    final void commit_is_delivered_and_rollback_is_not() throws Exception {
        PollingRelay relay = start(relay());
        Outbox outbox = outbox(relay);
        UUID committed = write(outbox, message("o-1", "OrderCreated")).get(0);
        UUID rolledBack;
        try (Connection c = db.connect()) {
            c.setAutoCommit(false);
            rolledBack = outbox.publish(c, message("o-2", "OrderCreated")).get(0);
            c.rollback();
        }
        await().atMost(WAIT).until(() -> OutboxStatus.pendingCount(adminSessions, schema) == 0
                && relay.stats().published() == 1);
        List<Sent> sent = delivered(topic, 1);
        assertThat(sent).extracting(Sent::eventId).containsExactly(committed).doesNotContain(rolledBack);
        assertThat(sent.get(0).key()).isEqualTo("o-1");
        assertThat(sent.get(0).eventType()).isEqualTo("OrderCreated");
        assertThat(sent.get(0).payload()).isEqualTo("{\"type\": \"OrderCreated\"}");
        assertThat(publishedRows()).isEqualTo(1);
    }

    @Test
    final void out_of_id_order_commits_are_both_delivered() throws Exception {
        PollingRelay relay = start(relay());
        Outbox outbox = outbox(relay);
        UUID late;
        UUID early;
        try (Connection a = db.connect(); Connection b = db.connect()) {
            a.setAutoCommit(false);
            b.setAutoCommit(false);
            late = outbox.publish(a, message("k-a", "First")).get(0);   // takes the lower id
            early = outbox.publish(b, message("k-b", "Second")).get(0); // higher id, commits first
            b.commit();
            await().atMost(WAIT).until(() -> relay.stats().published() == 1);
            a.commit();
        }
        await().atMost(WAIT).until(() -> relay.stats().published() == 2);
        assertThat(delivered(topic, 2)).extracting(Sent::eventId).containsExactlyInAnyOrder(late, early);
    }

    @Test
    final void a_record_failed_in_the_middle_of_a_batch_holds_back_only_its_key_and_keeps_its_order()
            throws Exception {
        // write first, start the relay after, so everything is one batch
        Outbox outbox = Outbox.builder().schema(schema).build();
        List<OutboxMessage> messages = new ArrayList<>();
        for (int seq = 1; seq <= 10; seq++) {
            for (int k = 0; k < 5; k++) {
                messages.add(message("k" + k, "E" + seq));
            }
        }
        List<UUID> ids = write(outbox, messages.toArray(new OutboxMessage[0]));
        UUID chosen = ids.get(5 * 4 + 2); // k2's E5, in the middle of the batch
        AtomicInteger once = new AtomicInteger();
        failRetriably(r -> r.eventId().equals(chosen) && once.getAndIncrement() == 0);
        // a backoff far longer than one turn of the lane: the next claim comes while E5 waits, so a claim that let
        // k2's later events pass it would send them now (InjectedDefectsIT, PER_ROW_BACKOFF). With the usual 50 ms
        // a loaded machine's next turn came after the backoff, E5 went out first, and the defect went unseen (the
        // CI run of 9f01a20)
        PollingRelay relay = start(relay().lanes(1)
                .retry(RetryPolicy.defaults().withBackoff(Duration.ofSeconds(1), Duration.ofSeconds(1)).withJitter(0)));
        await().atMost(WAIT).until(() -> relay.stats().published() == 50);
        assertThat(injected()).isEqualTo(1);
        assertThat(batchSizes().get(0)).as("all of them in the first batch").isEqualTo(50);
        assertHistoryClean(written);
        assertThat(db.queryLong("SELECT attempts FROM " + everyRow() + " r WHERE event_id = '" + chosen + "'"))
                .isEqualTo(1);
    }

    @Test
    final void poison_parks_its_key_other_keys_flow_and_release_resumes_in_order() throws Exception {
        PollingRelay relay = start(relay().failurePolicy(FailurePolicy.PARK_KEY));
        Outbox outbox = outbox(relay);
        List<UUID> ids = write(outbox, message("k1", "E1"), poison(builder("k1", "Poison")).build(),
                message("k1", "E3"), message("k2", "E1"), message("k2", "E2"));
        OutboxAdmin admin = admin();
        await().atMost(WAIT).until(() -> admin.list(EventFilter.parked(), 0, 10).size() == 1
                && relay.stats().published() >= 3);
        assertThat(relay.stats().published()).as("published while k1 is parked: its first event and k2's").isEqualTo(3);
        FailedEvent parked = admin.list(EventFilter.parked(), 0, 10).get(0);
        assertThat(parked.key()).isEqualTo("k1");
        assertThat(parked.eventId()).isEqualTo(ids.get(1));
        assertThat(parked.waiting()).isEqualTo(1);
        assertThat(parked.lastError()).containsIgnoringCase(poisonError());
        assertThat(delivered(topic, 3)).extracting(Sent::eventId).containsExactlyInAnyOrder(ids.get(0), ids.get(3),
                ids.get(4));
        await().atMost(WAIT).until(() -> relay.stats().parked() == 1);
        assertThat(count("state = 'PARKED' AND failed_at IS NOT NULL")).as("parking sets failed_at").isEqualTo(1);

        curePoison(topic);
        assertThat(admin.requeue(parked.eventId(), null)).isTrue();
        await().atMost(WAIT).until(() -> relay.stats().published() == 5);
        assertThat(firstDeliveries(delivered(topic, 5), "k1")).containsExactly(ids.get(0), ids.get(1), ids.get(2));
        assertHistoryClean(written);
    }

    @Test
    final void skip_gives_up_a_parked_event_and_the_key_moves_on() throws Exception {
        PollingRelay relay = start(relay());
        Outbox outbox = outbox(relay);
        List<UUID> ids = write(outbox, poison(builder("k1", "Poison")).build(), message("k1", "E2"));
        OutboxAdmin admin = admin();
        await().atMost(WAIT).until(() -> admin.list(EventFilter.parked(), 0, 10).size() == 1);
        assertThat(admin.skip(ids.get(0), null)).isTrue();
        await().atMost(WAIT).until(() -> relay.stats().published() == 1);
        assertThat(delivered(topic, 1)).extracting(Sent::eventId).containsExactly(ids.get(1));
        assertThat(admin.list(EventFilter.dead(), 0, 10)).extracting(FailedEvent::eventId).containsExactly(ids.get(0));
        assertThat(admin.skip(ids.get(0), null)).as("only parked events can be skipped").isFalse();
    }

    @Test
    final void dead_letter_and_continue_moves_the_poison_to_the_dead_letter_topic_with_the_reason()
            throws Exception {
        String deadLetters = newDeadLetterTopic(topic);
        PollingRelay relay = start(relay().failurePolicy(FailurePolicy.DEAD_LETTER_AND_CONTINUE)
                .deadLetterTopic(deadLetters));
        Outbox outbox = outbox(relay);
        List<UUID> ids = write(outbox, message("k1", "E1"), poison(builder("k1", "Poison")).build(),
                message("k1", "E3"));
        await().atMost(WAIT).until(() -> relay.stats().deadLettered() == 1 && relay.stats().published() == 2);
        assertThat(firstDeliveries(delivered(topic, 2), "k1")).containsExactly(ids.get(0), ids.get(2));
        List<Sent> dead = delivered(deadLetters, 1);
        assertThat(dead).extracting(Sent::eventId).containsExactly(ids.get(1));
        assertThat(dead.get(0).headers()).containsEntry("dlt-original-topic", topic)
                .containsKey("dlt-exception").containsKey("dlt-reason");
        List<FailedEvent> deadEvents = admin().list(EventFilter.dead(), 0, 10);
        assertThat(deadEvents).extracting(FailedEvent::eventId).containsExactly(ids.get(1));
        assertThat(deadEvents.get(0).lastError()).as("the reason").containsIgnoringCase(poisonError());
    }

    @Test
    final void retriable_failures_back_off_per_key_then_exhaust_into_the_policy() throws Exception {
        PollingRelay relay = start(relay().retry(RetryPolicy.defaults().withMaxAttempts(3)
                .withBackoff(Duration.ofMillis(100), Duration.ofMillis(100)).withJitter(0)));
        Outbox outbox = outbox(relay);
        failRetriably(r -> r.eventType().equals("Flaky"));
        List<UUID> ids = write(outbox, message("k1", "Flaky"), message("k1", "After"), message("k2", "Fine"));
        OutboxAdmin admin = admin();
        await().atMost(WAIT).until(() -> admin.list(EventFilter.parked(), 0, 10).size() == 1
                && relay.stats().published() == 1);
        assertThat(admin.list(EventFilter.parked(), 0, 10).get(0).attempts()).isEqualTo(3);
        assertThat(injected()).as("three tries, then the policy").isEqualTo(3);
        assertThat(delivered(topic, 1)).extracting(Sent::eventId).containsExactly(ids.get(2));
    }

    @Test
    final void a_transport_outage_backs_off_without_parking_and_everything_goes_out_after() throws Exception {
        requires(Capability.BROKER_OUTAGE);
        PollingRelay relay = start(relay().retry(RetryPolicy.defaults().withMaxAttempts(2))
                .outageBackoffMax(Duration.ofMillis(300)));
        Outbox outbox = outbox(relay);
        brokerDown();
        for (int i = 0; i < 20; i++) {
            write(outbox, message("k" + (i % 4), "E" + i));
        }
        OutboxAdmin admin = admin();
        // the outage is visible on the rows, and nothing is parked even with maxAttempts=2
        await().atMost(WAIT).until(() -> count("last_error LIKE 'transport unavailable%' AND next_attempt_at IS NOT "
                + "NULL") >= 2);
        long batchesDuringOutage = batchSizes().size();
        assertThat(admin.list(EventFilter.parked(), 0, 10)).isEmpty();
        brokerUp();
        await().atMost(WAIT).until(() -> relay.stats().published() == 20);
        assertHistoryClean(written);
        assertThat(admin.list(EventFilter.parked(), 0, 10)).isEmpty();
        assertThat(batchesDuringOutage).as("backing off, not spinning").isLessThan(200);
    }

    @Test
    final void a_second_relay_takes_its_fair_share_and_everything_when_the_first_closes() throws Exception {
        PollingRelay first = start(relay().lanes(4).leaseTimeout(Duration.ofSeconds(3)));
        await().atMost(WAIT).until(() -> first.stats().lanesOwned() == 4);
        PollingRelay second = start(relay().lanes(4).leaseTimeout(Duration.ofSeconds(3)));
        await().atMost(WAIT).until(() -> first.stats().lanesOwned() == 2 && second.stats().lanesOwned() == 2);
        Outbox outbox = Outbox.builder().schema(schema).afterPublish(() -> {
            first.nudge();
            second.nudge();
        }).build();
        for (int i = 0; i < 40; i++) {
            write(outbox, message("k" + i, "E1"));
        }
        await().atMost(WAIT).until(() -> first.stats().published() + second.stats().published() == 40);
        assertThat(first.stats().published()).as("both instances worked").isPositive();
        assertThat(second.stats().published()).isPositive();
        first.close();
        await().atMost(WAIT).until(() -> second.stats().lanesOwned() == 4);
        for (int i = 0; i < 40; i += 10) {
            write(outbox, message("k" + i, "E2"));
        }
        await().atMost(WAIT).until(() -> second.stats().published() + first.stats().published() == 44);
        assertHistoryClean(written);
    }

    @Test
    final void many_writers_with_random_failures_lose_nothing_and_keep_per_key_order() throws Exception {
        PollingRelay relay = start(relay().lanes(2).batchSize(200)
                .retry(RetryPolicy.defaults().withMaxAttempts(1000).withBackoff(Duration.ofMillis(5),
                        Duration.ofMillis(50))));
        Outbox outbox = outbox(relay);
        Random random = new Random(7);
        failRetriably(r -> random.nextInt(100) == 0);
        try (LedgerWriter writer = LedgerWriter.builder(db.dataSource(), db.schema()).threads(8).keys(100)
                .events(5_000).rollbackShare(0.05)
                .eventInserter((c, eventId, key, seq) -> outbox.publish(c, OutboxMessage.builder().eventId(eventId)
                        .topic(topic).aggregate("Key", key).eventType("Seq").aggregateVersion(seq)
                        .jsonPayload("{\"seq\":" + seq + "}").build()))
                .build().start()) {
            assertThat(writer.awaitDone(Duration.ofMinutes(2))).isTrue();
            assertThat(writer.errors()).isEmpty();
        }
        await().atMost(WAIT).until(() -> OutboxStatus.pendingCount(adminSessions, schema) == 0);
        List<LedgerEntry> ledger = Ledger.read(db.dataSource(), db.schema());
        assertThat(ledger.size()).isGreaterThan(4_000);
        assertHistoryClean(ledger);
        assertThat(injected()).isGreaterThan(10);
    }

    @Test
    final void a_batch_stops_growing_at_max_batch_bytes_but_always_takes_one_event() throws Exception {
        Outbox outbox = Outbox.builder().schema(schema).build();
        // first an event larger than the limit on its own, then ten that fit two or three to a batch
        write(outbox, builder("k-huge", "E").jsonPayload("{\"blob\":\"" + "x".repeat(1_200) + "\"}").build());
        String big = "{\"blob\":\"" + "x".repeat(400) + "\"}";
        for (int i = 0; i < 10; i++) {
            write(outbox, builder("k" + i, "E").jsonPayload(big).build());
        }
        PollingRelay relay = start(relay().lanes(1).batchSize(100).maxBatchBytes(1_000));
        await().atMost(WAIT).until(() -> relay.stats().published() == 11);
        assertThat(batchSizes().get(0)).as("the large event goes out, alone").isEqualTo(1);
        assertThat(batchSizes()).allSatisfy(size -> assertThat(size).isBetween(1, 3));
        assertHistoryClean(written);
    }

    @Test
    final void close_is_idempotent_and_bounded() {
        PollingRelay relay = start(relay());
        await().atMost(WAIT).until(() -> relay.stats().lanesOwned() == 2);
        long t0 = System.nanoTime();
        relay.close();
        relay.close();
        assertThat(TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - t0)).isLessThan(10);
        assertThat(relay.stats().lanesOwned()).isZero();
    }
}
