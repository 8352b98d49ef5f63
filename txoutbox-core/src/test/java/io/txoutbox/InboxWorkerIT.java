package io.txoutbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.txoutbox.testing.logging.CapturedStderr;
import io.txoutbox.testing.postgres.PostgresExtension;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

@Tag("pg-version")
class InboxWorkerIT {

    @RegisterExtension
    static final PostgresExtension postgres = new PostgresExtension();

    private static OutboxSchema schema;
    private static Inbox inbox;
    private static final Duration AWAIT = Duration.ofMinutes(2);
    private static final RetryPolicy FAST = RetryPolicy.defaults().withMaxAttempts(3)
            .withBackoff(Duration.ofMillis(50), Duration.ofMillis(200));

    @BeforeAll
    static void migrate() {
        schema = OutboxSchema.builder().schema(postgres.database().schema()).build();
        schema.migrate(postgres.database().dataSource());
        inbox = Inbox.create(schema);
        postgres.database().execute("CREATE TABLE effect (id bigserial PRIMARY KEY, consumer text NOT NULL,"
                + " k text NOT NULL, seq int NOT NULL, UNIQUE (consumer, k, seq))");
    }

    private static void receive(String consumer, List<InboxMessage> messages) throws Exception {
        try (Connection c = postgres.database().connect()) {
            c.setAutoCommit(false);
            inbox.receive(c, consumer, messages);
            c.commit();
        }
    }

    private static InboxMessage message(String key, int seq) {
        return InboxMessage.builder(UUID.randomUUID()).key(key).eventType("Seq")
                .payload(Integer.toString(seq).getBytes(java.nio.charset.StandardCharsets.UTF_8)).build();
    }

    /** A handler that records the effect and checks that the key's previous effect is seq - 1 (no gap, no swap). */
    private static InboxHandler recording(List<String> violations, Set<String> inProgress) {
        return (c, e) -> {
            String slot = e.consumer() + "/" + e.key();
            if (!inProgress.add(slot)) {
                violations.add("key " + e.key() + " processed by two workers at once");
            }
            try {
                int seq = Integer.parseInt(e.payloadAsString());
                try (PreparedStatement ps = c.prepareStatement(
                        "SELECT coalesce(max(seq), 0) FROM effect WHERE consumer = ? AND k = ?")) {
                    ps.setString(1, e.consumer());
                    ps.setString(2, e.key());
                    try (ResultSet rs = ps.executeQuery()) {
                        rs.next();
                        if (rs.getInt(1) != seq - 1) {
                            violations.add("key " + e.key() + ": seq " + seq + " after " + rs.getInt(1));
                        }
                    }
                }
                try (PreparedStatement ps = c.prepareStatement("INSERT INTO effect (consumer, k, seq) VALUES (?, ?, ?)")) {
                    ps.setString(1, e.consumer());
                    ps.setString(2, e.key());
                    ps.setInt(3, seq);
                    ps.executeUpdate();
                }
            } finally {
                inProgress.remove(slot);
            }
        };
    }

    private static long effects(String consumer) {
        return postgres.database().queryLong("SELECT count(*) FROM effect WHERE consumer = '" + consumer + "'");
    }

    @Test
    void several_workers_process_every_event_once_in_key_order_also_while_one_leaves_and_handlers_fail()
            throws Exception {
        String consumer = "order-" + UUID.randomUUID();
        int keys = 40;
        int perKey = 50;
        List<String> violations = new CopyOnWriteArrayList<>();
        Set<String> inProgress = ConcurrentHashMap.newKeySet();
        InboxHandler record = recording(violations, inProgress);
        Map<UUID, Boolean> failedOnce = new ConcurrentHashMap<>();
        Random random = new Random(7);
        Set<UUID> flaky = ConcurrentHashMap.newKeySet();
        InboxHandler flakyHandler = (c, e) -> {
            if (flaky.contains(e.eventId()) && failedOnce.putIfAbsent(e.eventId(), true) == null) {
                throw new IllegalStateException("transient failure of " + e.eventId());
            }
            record.handle(c, e);
        };
        List<InboxWorker> workers = new ArrayList<>();
        try {
            for (int w = 0; w < 3; w++) {
                workers.add(InboxWorker.builder().dataSource(postgres.database().dataSource()).schema(schema)
                        .consumer(consumer).name("w" + w).lanes(4).batchSize(25).pollInterval(Duration.ofMillis(20))
                        .retry(FAST.withMaxAttempts(5)).handler("Seq", flakyHandler).build().start());
            }
            // received in batches that interleave keys; per key in sequence order
            int[] next = new int[keys];
            int total = 0;
            while (total < keys * perKey) {
                List<InboxMessage> batch = new ArrayList<>();
                for (int i = 0; i < 97 && total < keys * perKey; i++) {
                    int k = random.nextInt(keys);
                    if (next[k] == perKey) {
                        continue;
                    }
                    InboxMessage m = message("k" + k, ++next[k]);
                    if (random.nextInt(20) == 0) {
                        flaky.add(m.eventId());
                    }
                    batch.add(m);
                    total++;
                }
                receive(consumer, batch);
                workers.forEach(InboxWorker::nudge);
                if (total > keys * perKey / 2 && workers.size() == 3) {
                    workers.remove(0).close(); // its lanes are taken over by the others
                }
            }
            await().atMost(AWAIT).until(() -> effects(consumer) == (long) keys * perKey);
            assertThat(InboxAdmin.create(postgres.database().dataSource(), schema).pendingCount(consumer)).isZero();
        } finally {
            workers.forEach(InboxWorker::close);
        }
        assertThat(violations).isEmpty();
        assertThat(flaky).isNotEmpty();
        assertThat(failedOnce.keySet()).as("the flaky events really failed first").isEqualTo(flaky);
        // per key, effect ids (commit of the handler's insert) rise with seq
        try (Connection c = postgres.database().connect(); Statement st = c.createStatement();
                ResultSet rs = st.executeQuery("SELECT count(*) FROM (SELECT seq, lag(seq) OVER (PARTITION BY k"
                        + " ORDER BY id) AS prev FROM effect WHERE consumer = '" + consumer + "') x"
                        + " WHERE prev IS NOT NULL AND prev <> seq - 1")) {
            rs.next();
            assertThat(rs.getLong(1)).as("out-of-order effects").isZero();
        }
    }

    @Test
    void a_failing_event_is_retried_with_backoff_then_parks_its_key_while_other_keys_proceed() throws Exception {
        String consumer = "park-" + UUID.randomUUID();
        List<String> violations = new CopyOnWriteArrayList<>();
        InboxHandler record = recording(violations, ConcurrentHashMap.newKeySet());
        AtomicInteger poisonCalls = new AtomicInteger();
        List<InboxMessage> messages = new ArrayList<>();
        for (int seq = 1; seq <= 5; seq++) {
            messages.add(message("bad", seq));
            messages.add(message("good", seq));
        }
        UUID poison = messages.get(2).eventId(); // bad#2
        java.util.concurrent.atomic.AtomicBoolean healed = new java.util.concurrent.atomic.AtomicBoolean();
        InboxHandler handler = (c, e) -> {
            if (e.eventId().equals(poison) && !healed.get()) {
                poisonCalls.incrementAndGet();
                throw new IllegalStateException("downstream says no");
            }
            record.handle(c, e);
        };
        receive(consumer, messages);
        InboxAdmin admin = InboxAdmin.create(postgres.database().dataSource(), schema);
        try (InboxWorker worker = InboxWorker.builder().dataSource(postgres.database().dataSource()).schema(schema)
                .consumer(consumer).pollInterval(Duration.ofMillis(20)).retry(FAST).handler("Seq", handler).build()
                .start()) {
            await().atMost(AWAIT).until(() -> admin.list(EventFilter.parked().consumer(consumer), 0, 10).size() == 1);
            await().atMost(AWAIT).until(() -> postgres.database().queryLong("SELECT count(*) FROM effect WHERE"
                    + " consumer = '" + consumer + "' AND k = 'good'") == 5);
            FailedEvent parked = admin.list(EventFilter.parked().consumer(consumer), 0, 10).get(0);
            assertThat(parked.eventId()).isEqualTo(poison);
            assertThat(parked.key()).isEqualTo("bad");
            assertThat(parked.attempts()).isEqualTo(3);
            assertThat(parked.waiting()).isEqualTo(3);
            assertThat(parked.lastError()).contains("downstream says no");
            assertThat(poisonCalls.get()).isEqualTo(3);
            assertThat(postgres.database().queryLong("SELECT max(seq) FROM effect WHERE consumer = '" + consumer
                    + "' AND k = 'bad'")).as("the key stops at its failed event").isEqualTo(1);
            assertThat(worker.stats().parked()).isEqualTo(1);

            healed.set(true);
            assertThat(admin.requeue(consumer, poison, null)).isTrue();
            worker.nudge();
            await().atMost(AWAIT).until(() -> effects(consumer) == 10);
        }
        assertThat(violations).isEmpty();
    }

    /** A key that is personal data: it must not reach the log unless asked for. */
    private static final String PERSONAL_KEY = "customer-4711@example.com";

    /** Fails the key's event until it parks, capturing the worker's log; returns the log. */
    private static String parkPersonalKey(InboxWorker.Builder builder) throws Exception {
        String consumer = "keys-" + UUID.randomUUID();
        InboxMessage poison = message(PERSONAL_KEY, 1);
        receive(consumer, List.of(poison));
        InboxAdmin admin = InboxAdmin.create(postgres.database().dataSource(), schema);
        try (CapturedStderr err = CapturedStderr.start();
                InboxWorker worker = builder.dataSource(postgres.database().dataSource()).schema(schema)
                        .consumer(consumer).pollInterval(Duration.ofMillis(20)).retry(FAST)
                        .handler("Seq", (c, e) -> {
                            throw new IllegalStateException("downstream says no");
                        }).build().start()) {
            await().atMost(AWAIT).until(() -> admin.list(EventFilter.parked().consumer(consumer), 0, 10).size() == 1);
            String log = err.text();
            assertThat(log).contains(poison.eventId() + " (key ")
                    .contains(poison.eventId() + " failed 3 times; key ");
            return log;
        }
    }

    @Test
    void partition_keys_stay_out_of_the_worker_log_by_default() throws Exception {
        String log = parkPersonalKey(InboxWorker.builder());
        assertThat(log).doesNotContain(PERSONAL_KEY);
        String tag = io.txoutbox.internal.LoggedKeys.tag(PERSONAL_KEY);
        assertThat(log).as("the lines of the key share its tag").contains("(key " + tag + ") failed, attempt 1")
                .contains("key " + tag + " of consumer");
    }

    @Test
    void partition_keys_are_in_the_worker_log_when_enabled() throws Exception {
        assertThat(parkPersonalKey(InboxWorker.builder().logPartitionKeys(true)))
                .contains("(key " + PERSONAL_KEY + ") failed, attempt 1").contains("key " + PERSONAL_KEY + " of consumer");
    }

    @Test
    void with_dead_letter_and_continue_the_event_is_dead_and_its_key_moves_on() throws Exception {
        String consumer = "dead-" + UUID.randomUUID();
        List<String> violations = new CopyOnWriteArrayList<>();
        InboxHandler record = recording(violations, ConcurrentHashMap.newKeySet());
        List<InboxMessage> messages = new ArrayList<>();
        for (int seq = 1; seq <= 4; seq++) {
            messages.add(message("k", seq));
        }
        UUID poison = messages.get(1).eventId();
        receive(consumer, messages);
        InboxAdmin admin = InboxAdmin.create(postgres.database().dataSource(), schema);
        try (InboxWorker worker = InboxWorker.builder().dataSource(postgres.database().dataSource()).schema(schema)
                .consumer(consumer).pollInterval(Duration.ofMillis(20)).retry(FAST)
                .failurePolicy(FailurePolicy.DEAD_LETTER_AND_CONTINUE)
                .handler("Seq", (c, e) -> {
                    if (e.eventId().equals(poison)) {
                        throw new OutboxException("malformed payload"); // permanent: no retries
                    }
                    try (PreparedStatement ps = c.prepareStatement(
                            "INSERT INTO effect (consumer, k, seq) VALUES (?, ?, ?)")) {
                        ps.setString(1, e.consumer());
                        ps.setString(2, e.key());
                        ps.setInt(3, Integer.parseInt(e.payloadAsString()));
                        ps.executeUpdate();
                    }
                }).build().start()) {
            await().atMost(AWAIT).until(() -> effects(consumer) == 3);
            assertThat(worker.stats().dead()).isEqualTo(1);
        }
        List<FailedEvent> dead = admin.list(EventFilter.dead().consumer(consumer), 0, 10);
        assertThat(dead).hasSize(1);
        assertThat(dead.get(0).eventId()).isEqualTo(poison);
        assertThat(dead.get(0).attempts()).as("permanent: one attempt").isEqualTo(1);
        assertThat(dead.get(0).lastError()).contains("malformed payload");
        assertThat(admin.list(EventFilter.parked().consumer(consumer), 0, 10)).isEmpty();
        assertThat(violations).isEmpty();
    }

    @Test
    void a_failed_handler_leaves_no_effects_and_an_unknown_event_type_parks() throws Exception {
        String consumer = "undo-" + UUID.randomUUID();
        UUID unknown = UUID.randomUUID();
        receive(consumer, List.of(message("a", 1), InboxMessage.builder(unknown).key("b").eventType("Other").build()));
        InboxAdmin admin = InboxAdmin.create(postgres.database().dataSource(), schema);
        AtomicInteger calls = new AtomicInteger();
        try (InboxWorker worker = InboxWorker.builder().dataSource(postgres.database().dataSource()).schema(schema)
                .consumer(consumer).pollInterval(Duration.ofMillis(20)).retry(FAST.withMaxAttempts(2))
                .handler("Seq", (c, e) -> {
                    try (PreparedStatement ps = c.prepareStatement(
                            "INSERT INTO effect (consumer, k, seq) VALUES (?, ?, ?)")) {
                        ps.setString(1, e.consumer());
                        ps.setString(2, e.key());
                        ps.setInt(3, 1);
                        ps.executeUpdate();
                    }
                    if (calls.incrementAndGet() == 1) {
                        throw new IllegalStateException("fails after writing");
                    }
                }).build().start()) {
            await().atMost(AWAIT).until(() -> admin.list(EventFilter.parked().consumer(consumer), 0, 10).size() == 1
                    && effects(consumer) == 1);
        }
        assertThat(calls.get()).isEqualTo(2);
        assertThat(admin.list(EventFilter.parked().consumer(consumer), 0, 10).get(0).eventId()).isEqualTo(unknown);
        assertThat(admin.list(EventFilter.parked().consumer(consumer), 0, 10).get(0).lastError())
                .contains("no handler for event type 'Other'");
        assertThat(admin.skip(consumer, unknown, null)).isTrue();
        assertThat(admin.list(EventFilter.dead().consumer(consumer), 0, 10))
                .extracting(FailedEvent::eventId).containsExactly(unknown);
    }

    @Test
    void workers_with_different_lane_counts_refuse_to_share_a_consumer() throws Exception {
        String consumer = "lanes-" + UUID.randomUUID();
        InboxHandler noop = (c, e) -> { };
        try (InboxWorker a = InboxWorker.builder().dataSource(postgres.database().dataSource()).schema(schema)
                .consumer(consumer).lanes(2).handler("Seq", noop).build().start()) {
            await().atMost(AWAIT).until(() -> a.stats().lanesOwned() == 2);
            try (InboxWorker b = InboxWorker.builder().dataSource(postgres.database().dataSource()).schema(schema)
                    .consumer(consumer).lanes(3).handler("Seq", noop).build().start()) {
                receive(consumer, List.of(message("x", 1)));
                await().atMost(AWAIT).until(() -> a.stats().processed() == 1);
                assertThat(b.stats().lanesOwned()).isZero();
            }
        }
    }
}
