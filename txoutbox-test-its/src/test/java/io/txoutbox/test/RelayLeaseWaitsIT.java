package io.txoutbox.test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.txoutbox.FailurePolicy;
import io.txoutbox.Outbox;
import io.txoutbox.OutboxMessage;
import io.txoutbox.OutboxSchema;
import io.txoutbox.OutboxStatus;
import io.txoutbox.PollingRelay;
import io.txoutbox.RetryPolicy;
import io.txoutbox.spi.OutboxRecord;
import io.txoutbox.spi.RelayListener;
import io.txoutbox.spi.SendResult;
import io.txoutbox.spi.Transport;
import io.txoutbox.testing.postgres.PostgresExtension;
import io.txoutbox.testing.postgres.TestDatabase;
import java.sql.Connection;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A lane keeps its lease through every wait, and a mark that fails for a reason other than a lost session neither
 * drops the lane nor sends its batch again.
 *
 * <p>The lease is 2 s (idle_session_timeout = 2 s on the lane's session, so a lane that stays silent for longer loses
 * its session and with it the lane's advisory lock); each slow step of the transport takes about twice as long. The
 * mark failures come from a trigger on the outbox table that raises for the first N updates to PUBLISHED (a sequence
 * counts them: it does not roll back with the failed mark).
 */
class RelayLeaseWaitsIT {

    private static final Logger log = LoggerFactory.getLogger(RelayLeaseWaitsIT.class);

    @RegisterExtension
    static final PostgresExtension postgres = new PostgresExtension();

    private static final Duration LEASE = Duration.ofSeconds(2);
    private static final Duration SLOW = LEASE.multipliedBy(2);
    private static final Duration WAIT = Duration.ofSeconds(30);

    private final ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor(r -> {
        Thread t = new Thread(r, "slow-transport");
        t.setDaemon(true);
        return t;
    });
    private TestDatabase db;
    private OutboxSchema schema;
    private Outbox outbox;
    private InMemoryTransport memory;
    private PollingRelay relay;

    @BeforeEach
    void setUp(TestInfo info) {
        db = postgres.database();
        String name = info.getTestMethod().orElseThrow().getName();
        schema = OutboxSchema.builder().schema(db.schema()).outboxTable("lw_" + Math.abs(name.hashCode())).shards(4)
                .build();
        schema.migrate(db.dataSource());
        outbox = Outbox.builder().schema(schema).build();
        memory = new InMemoryTransport();
    }

    @AfterEach
    void tearDown() {
        if (relay != null) {
            relay.close();
        }
        timer.shutdownNow();
    }

    private PollingRelay.Builder relay(Transport transport) {
        return PollingRelay.builder().dataSource(db.dataSource()).schema(schema).transport(transport)
                .name("lw").lanes(1).batchSize(100).pollInterval(Duration.ofMillis(50)).leaseTimeout(LEASE)
                .retry(RetryPolicy.defaults().withBackoff(Duration.ofMillis(50), Duration.ofMillis(200)));
    }

    private PollingRelay start(PollingRelay.Builder builder) {
        relay = builder.build();
        relay.start();
        await().atMost(WAIT).until(() -> relay.stats().lanesOwned() == 1);
        return relay;
    }

    private List<UUID> write(String... keys) throws Exception {
        List<OutboxMessage> messages = new ArrayList<>();
        for (String key : keys) {
            // a key "poison-..." makes an event of type Poison
            messages.add(OutboxMessage.builder().topic("orders").aggregate("Order", key)
                    .eventType(key.startsWith("poison") ? "Poison" : "E").jsonPayload("{}").build());
        }
        try (Connection c = db.connect()) {
            c.setAutoCommit(false);
            List<UUID> ids = outbox.publish(c, messages.toArray(new OutboxMessage[0]));
            c.commit();
            return ids;
        }
    }

    private long pending() {
        return OutboxStatus.pendingCount(db.dataSource(), schema);
    }

    /** How often each event reached the topic (0: never). */
    private Map<UUID, Long> deliveries(String topic, List<UUID> ids) {
        Map<UUID, Long> counts = memory.delivered(topic).stream()
                .collect(Collectors.groupingBy(OutboxRecord::eventId, Collectors.counting()));
        return ids.stream().collect(Collectors.toMap(Function.identity(), id -> counts.getOrDefault(id, 0L)));
    }

    private Instant ownedSince() {
        return relay.lanes().get(0).ownedSince();
    }

    /**
     * The in-memory transport, slow for the first send of lanes whose name ends with {@code laneSuffix}: either its
     * send call blocks the calling (lane) thread for {@code delay}, or its stage completes only after {@code delay}.
     */
    private final class SlowFirstSend implements Transport {
        final CountDownLatch slowStarted = new CountDownLatch(1);
        private final String laneSuffix;
        private final Duration delay;
        private final boolean blocking;
        private final AtomicInteger sends = new AtomicInteger();

        SlowFirstSend(String laneSuffix, Duration delay, boolean blocking) {
            this.laneSuffix = laneSuffix;
            this.delay = delay;
            this.blocking = blocking;
        }

        @Override
        public CompletionStage<List<SendResult>> send(String lane, List<OutboxRecord> batch) {
            if (!lane.endsWith(laneSuffix) || sends.getAndIncrement() != 0) {
                return memory.send(lane, batch);
            }
            slowStarted.countDown();
            if (blocking) {
                sleep(delay);
                return memory.send(lane, batch);
            }
            CompletableFuture<List<SendResult>> later = new CompletableFuture<>();
            timer.schedule(() -> memory.send(lane, batch).whenComplete((r, e) -> {
                if (e != null) {
                    later.completeExceptionally(e);
                } else {
                    later.complete(r);
                }
            }), delay.toMillis(), TimeUnit.MILLISECONDS);
            return later;
        }
    }

    private static void sleep(Duration d) {
        try {
            Thread.sleep(d.toMillis());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    // ---- (a) waits longer than the lease -------------------------------------------------------------------------

    @Test
    void a_send_call_that_blocks_the_lane_for_twice_the_lease_keeps_the_lease_and_delivers_once() throws Exception {
        SlowFirstSend transport = new SlowFirstSend("lw-0", SLOW, true);
        start(relay(transport));
        Instant since = ownedSince();
        List<UUID> ids = write("a", "b", "c");
        assertThat(transport.slowStarted.await(30, TimeUnit.SECONDS)).isTrue();
        await().atMost(WAIT).until(() -> pending() == 0);
        Map<UUID, Long> counts = deliveries("orders", ids);
        log.info("blocking send of {} ms, lease {} ms: deliveries {}, stats {}", SLOW.toMillis(), LEASE.toMillis(),
                counts.values(), relay.stats());
        assertThat(relay.stats().fencedMarks()).as("marks refused after a lost lease").isZero();
        assertThat(counts).as("deliveries per event").allSatisfy((id, n) -> assertThat(n).isEqualTo(1));
        assertThat(relay.stats().loopErrors()).isZero();
        assertThat(ownedSince()).as("the lane was owned throughout").isEqualTo(since);
    }

    @Test
    void a_dead_letter_send_slower_than_the_lease_keeps_the_lease_and_delivers_once() throws Exception {
        SlowFirstSend transport = new SlowFirstSend("-dlt", SLOW, false);
        memory.failWhen(r -> r.eventType().equals("Poison") && r.topic().equals("orders"), SendResult.Kind.PERMANENT);
        start(relay(transport).failurePolicy(FailurePolicy.DEAD_LETTER_AND_CONTINUE).deadLetterTopic("dlt"));
        Instant since = ownedSince();
        List<UUID> all = write("a", "poison-b", "c");
        UUID poison = all.get(1);
        assertThat(transport.slowStarted.await(30, TimeUnit.SECONDS)).as("the dead-letter send began").isTrue();
        await().atMost(WAIT).until(() -> pending() == 0);
        Map<UUID, Long> counts = deliveries("orders", all);
        counts.remove(poison);
        Map<UUID, Long> dead = deliveries("dlt", List.of(poison));
        log.info("dead-letter send of {} ms, lease {} ms: deliveries {}, dead-lettered {}, stats {}", SLOW.toMillis(),
                LEASE.toMillis(), counts.values(), dead.values(), relay.stats());
        assertThat(relay.stats().fencedMarks()).as("marks refused after a lost lease").isZero();
        assertThat(counts).as("deliveries per event").allSatisfy((id, n) -> assertThat(n).isEqualTo(1));
        assertThat(dead.get(poison)).as("dead-lettered once").isEqualTo(1);
        assertThat(relay.stats().loopErrors()).isZero();
        assertThat(ownedSince()).as("the lane was owned throughout").isEqualTo(since);
    }

    /**
     * The other side of keeping the lease in a call out of the lane: a send call that hangs is kept alive for at
     * most relay.sendTimeout, then the session ends within the lease and a second instance takes the lane over. When
     * the hung call returns, the first instance marks nothing.
     */
    @Test
    void a_send_call_that_hangs_past_the_send_timeout_gives_the_lane_to_another_instance() throws Exception {
        Duration sendTimeout = LEASE;
        CountDownLatch hung = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        InMemoryTransport stuckMemory = new InMemoryTransport();
        Transport stuck = (lane, batch) -> {
            hung.countDown();
            try {
                release.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            return stuckMemory.send(lane, batch);
        };
        start(relay(stuck).sendTimeout(sendTimeout));
        PollingRelay first = relay;
        List<UUID> ids = write("a", "b");
        assertThat(hung.await(30, TimeUnit.SECONDS)).isTrue();
        long hungAt = System.nanoTime();
        PollingRelay second = relay(memory).sendTimeout(sendTimeout).build();
        try {
            second.start();
            await().atMost(WAIT).until(() -> second.stats().lanesOwned() == 1);
            long takeoverMs = (System.nanoTime() - hungAt) / 1_000_000;
            await().atMost(WAIT).until(() -> pending() == 0);
            release.countDown();
            await().atMost(WAIT).until(() -> first.stats().fencedMarks() == 1);
            log.info("send call hung: send timeout {} ms, lease {} ms: second instance owned the lane after {} ms, "
                    + "deliveries {} (hung instance {}), first {}, second {}", sendTimeout.toMillis(),
                    LEASE.toMillis(), takeoverMs, deliveries("orders", ids).values(), stuckMemory.delivered().size(),
                    first.stats(), second.stats());
            assertThat(takeoverMs).as("take-over within send timeout + lease + standby retry (1 s) + margin")
                    .isLessThan(sendTimeout.plus(LEASE).toMillis() + 3_000);
            assertThat(deliveries("orders", ids)).as("deliveries by the second instance")
                    .allSatisfy((id, n) -> assertThat(n).isEqualTo(1));
            assertThat(first.stats().published()).as("the hung instance marked nothing").isZero();
            assertThat(first.stats().batches()).as("and sent nothing more").isZero();
        } finally {
            release.countDown();
            second.close();
        }
    }

    /**
     * The relay's listener runs on the lane's thread: a callback before the mark (sendFailed) and one after it
     * (batchCompleted) each block for twice the lease, the first time.
     */
    @Test
    void listener_callbacks_slower_than_the_lease_keep_the_lease_and_deliver_once() throws Exception {
        AtomicInteger slowSendFailed = new AtomicInteger();
        AtomicInteger slowBatchCompleted = new AtomicInteger();
        RelayListener slow = new RelayListener() {
            @Override
            public void sendFailed(String topic, SendResult.Kind kind) {
                if (slowSendFailed.getAndIncrement() == 0) {
                    sleep(SLOW);
                }
            }

            @Override
            public void batchCompleted(int size, long claimNanos, long sendNanos, long markNanos) {
                if (slowBatchCompleted.getAndIncrement() == 0) {
                    sleep(SLOW);
                }
            }
        };
        memory.failWhen(r -> r.eventType().equals("Poison"), SendResult.Kind.RETRIABLE, 1);
        start(relay(memory).listener(slow));
        Instant since = ownedSince();
        List<UUID> ids = write("a", "poison-b", "c");
        await().atMost(WAIT).until(() -> pending() == 0);
        Map<UUID, Long> counts = deliveries("orders", ids);
        log.info("listener callbacks of {} ms, lease {} ms: deliveries {}, stats {}", SLOW.toMillis(),
                LEASE.toMillis(), counts.values(), relay.stats());
        assertThat(slowSendFailed.get()).as("sendFailed calls").isPositive();
        assertThat(relay.stats().fencedMarks()).as("marks refused after a lost lease").isZero();
        assertThat(counts).as("deliveries per event").allSatisfy((id, n) -> assertThat(n).isEqualTo(1));
        assertThat(relay.stats().loopErrors()).isZero();
        assertThat(ownedSince()).as("the lane was owned throughout").isEqualTo(since);
    }

    /**
     * The first send outlasts the send timeout (4 s, twice the lease) and completes after 7 s; meanwhile the lane
     * claims a later event and waits for that unfinished send before sending it: about 3 s, past the lease.
     */
    @Test
    void waiting_for_an_unfinished_send_past_the_lease_keeps_the_lease() throws Exception {
        Duration sendTimeout = SLOW;
        SlowFirstSend transport = new SlowFirstSend("lw-0", Duration.ofMillis(7_000), false);
        start(relay(transport).sendTimeout(sendTimeout));
        Instant since = ownedSince();
        UUID first = write("a").get(0);
        assertThat(transport.slowStarted.await(30, TimeUnit.SECONDS)).isTrue();
        UUID second = write("b").get(0);
        await().atMost(WAIT).until(() -> pending() == 0);
        Map<UUID, Long> counts = deliveries("orders", List.of(first, second));
        log.info("unfinished send: send timeout {} ms, lease {} ms: deliveries first {} second {}, stats {}",
                sendTimeout.toMillis(), LEASE.toMillis(), counts.get(first), counts.get(second), relay.stats());
        assertThat(relay.stats().fencedMarks()).as("marks refused after a lost lease").isZero();
        assertThat(counts.get(second)).as("the event sent after the wait").isEqualTo(1);
        // the timed-out send counts as undelivered, so its event is sent again: a duplicate bounded by that batch
        assertThat(counts.get(first)).isBetween(1L, 2L);
        assertThat(relay.stats().loopErrors()).isZero();
        assertThat(ownedSince()).as("the lane was owned throughout").isEqualTo(since);
    }

    // ---- (b) a mark that fails for a reason other than a lost session --------------------------------------------

    private void failMarks(long times) {
        String t = schema.qualifiedOutboxTable();
        String s = db.schema();
        db.execute("CREATE SEQUENCE " + s + ".mark_faults",
                "CREATE FUNCTION " + s + ".fail_marks() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN"
                        + " IF NEW.state = 'PUBLISHED' AND OLD.state = 'PENDING'"
                        + " AND nextval('" + s + ".mark_faults') <= " + times + " THEN"
                        + " RAISE EXCEPTION 'injected mark failure'; END IF; RETURN NEW; END $$",
                "CREATE TRIGGER fail_marks BEFORE UPDATE ON " + t + " FOR EACH ROW EXECUTE FUNCTION " + s
                        + ".fail_marks()");
    }

    private void healMarks() {
        db.execute("DROP TRIGGER fail_marks ON " + schema.qualifiedOutboxTable(),
                "DROP FUNCTION " + db.schema() + ".fail_marks()", "DROP SEQUENCE " + db.schema() + ".mark_faults");
    }

    @Test
    void a_mark_that_fails_three_times_is_retried_without_sending_the_batch_again() throws Exception {
        failMarks(3);
        try {
            List<UUID> ids = write("a", "b", "c", "d", "e");
            start(relay(memory));
            Instant since = ownedSince();
            await().atMost(WAIT).until(() -> pending() == 0);
            Map<UUID, Long> counts = deliveries("orders", ids);
            log.info("mark failing 3 times: deliveries {}, stats {}", counts.values(), relay.stats());
            assertThat(db.queryLong("SELECT last_value FROM " + db.schema() + ".mark_faults"))
                    .as("the mark was tried 4 times").isGreaterThanOrEqualTo(4);
            assertThat(counts).as("deliveries per event").allSatisfy((id, n) -> assertThat(n).isEqualTo(1));
            assertThat(relay.stats().loopErrors()).as("the lane was not dropped").isZero();
            assertThat(relay.stats().fencedMarks()).isZero();
            assertThat(relay.stats().markRetries()).as("marks tried again").isEqualTo(3);
            assertThat(ownedSince()).as("the lane was owned throughout").isEqualTo(since);
        } finally {
            healMarks();
        }
    }

    /** The mark keeps failing; the test ends the lane's session during the retries: the next owner sends once more. */
    @Test
    void a_mark_retried_until_the_session_is_lost_is_sent_once_more_by_the_next_owner() throws Exception {
        failMarks(Long.MAX_VALUE);
        try {
            List<UUID> ids = write("a", "b", "c");
            start(relay(memory));
            await().atMost(WAIT).until(() -> db.queryLong("SELECT last_value FROM " + db.schema() + ".mark_faults")
                    >= 3);
            assertThat(deliveries("orders", ids)).as("no resend while the mark is retried")
                    .allSatisfy((id, n) -> assertThat(n).isEqualTo(1));
            long ended = db.queryLong("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
                    + " WHERE application_name LIKE 'txoutbox-relay lw-0 %'");
            assertThat(ended).isEqualTo(1);
            memory.awaitDelivered(r -> r.eventId().equals(ids.get(0)), 2, WAIT);
            long before = db.queryLong("SELECT last_value FROM " + db.schema() + ".mark_faults");
            await().atMost(WAIT).until(() -> db.queryLong("SELECT last_value FROM " + db.schema() + ".mark_faults")
                    >= before + 2);
            healMarks();
            await().atMost(WAIT).until(() -> pending() == 0);
            Map<UUID, Long> counts = deliveries("orders", ids);
            log.info("mark failing until the session ended: deliveries {}, stats {}", counts.values(), relay.stats());
            assertThat(counts).as("deliveries per event: once per lease").allSatisfy((id, n) -> assertThat(n)
                    .isEqualTo(2));
            assertThat(relay.stats().fencedMarks()).as("the mark refused after the session ended").isEqualTo(1);
        } finally {
            db.execute("DROP TRIGGER IF EXISTS fail_marks ON " + schema.qualifiedOutboxTable(),
                    "DROP FUNCTION IF EXISTS " + db.schema() + ".fail_marks()",
                    "DROP SEQUENCE IF EXISTS " + db.schema() + ".mark_faults");
        }
    }
}
