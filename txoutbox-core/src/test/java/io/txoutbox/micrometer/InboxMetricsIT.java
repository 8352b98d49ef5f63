package io.txoutbox.micrometer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.Tag;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.txoutbox.FailurePolicy;
import io.txoutbox.Inbox;
import io.txoutbox.InboxAdmin;
import io.txoutbox.InboxHandler;
import io.txoutbox.InboxMessage;
import io.txoutbox.InboxWorker;
import io.txoutbox.OutboxException;
import io.txoutbox.OutboxSchema;
import io.txoutbox.RetryPolicy;
import io.txoutbox.spi.InboxListener;
import io.txoutbox.testing.postgres.PostgresExtension;
import io.txoutbox.testing.postgres.TestDatabase;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The inbox worker's meters and the inbox gauges, against a real PostgreSQL. */
class InboxMetricsIT {

    @RegisterExtension
    static final PostgresExtension postgres = new PostgresExtension();

    private static final Duration WAIT = Duration.ofSeconds(60);
    private static final RetryPolicy FAST = RetryPolicy.defaults().withMaxAttempts(3)
            .withBackoff(Duration.ofMillis(50), Duration.ofMillis(200));

    private static OutboxSchema schema;
    private static Inbox inbox;
    private TestDatabase db;
    private SimpleMeterRegistry registry;
    private String consumer;
    private final List<AutoCloseable> closeables = new ArrayList<>();

    @BeforeAll
    static void migrate() {
        schema = OutboxSchema.builder().schema(postgres.database().schema()).build();
        schema.migrate(postgres.database().dataSource());
        inbox = Inbox.create(schema);
    }

    @BeforeEach
    void setUp() {
        db = postgres.database();
        registry = new SimpleMeterRegistry();
        consumer = "metrics-" + UUID.randomUUID();
    }

    @AfterEach
    void tearDown() throws Exception {
        for (int i = closeables.size() - 1; i >= 0; i--) {
            closeables.get(i).close();
        }
        registry.close();
    }

    private void receive(InboxMessage... messages) throws SQLException {
        try (Connection c = db.connect()) {
            c.setAutoCommit(false);
            inbox.receive(c, consumer, List.of(messages));
            c.commit();
        }
    }

    private static InboxMessage message(String key, String type) {
        return InboxMessage.builder(UUID.randomUUID()).key(key).eventType(type)
                .payload("{}".getBytes(StandardCharsets.UTF_8)).build();
    }

    private InboxWorker start(InboxWorker.Builder builder) {
        InboxWorker worker = builder.build();
        closeables.add(worker);
        return worker.start();
    }

    private InboxWorker.Builder worker(InboxHandler handler) {
        return InboxWorker.builder().dataSource(db.dataSource()).schema(schema).consumer(consumer).lanes(2)
                .batchSize(5).pollInterval(Duration.ofMillis(20)).retry(FAST).defaultHandler(handler);
    }

    private double counter(String name, String... tags) {
        var c = registry.find(name).tags("consumer", consumer).tags(tags).counter();
        return c == null ? 0 : c.count();
    }

    private Timer timer(String name, String... tags) {
        return registry.get(name).tags("consumer", consumer).tags(tags).timer();
    }

    private static void pgSleep(Connection c, double seconds) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("SELECT pg_sleep(?)")) {
            ps.setDouble(1, seconds);
            ps.execute();
        }
    }

    @Test
    void counters_and_timers_move_as_the_worker_processes_and_handlers_fail() throws Exception {
        InboxMessage flaky = message("f", "Seq");
        InboxMessage poison = message("p", "Poison");
        InboxMessage behindPoison = message("p", "Seq");
        InboxMessage slow = message("s", "Slow");
        List<InboxMessage> messages = new ArrayList<>();
        for (int i = 0; i < 12; i++) {
            messages.add(message("k" + (i % 3), "Seq"));
        }
        messages.addAll(List.of(flaky, poison, behindPoison, slow));
        receive(messages.toArray(new InboxMessage[0]));
        // by the database's clock, as the worker measures it: every event waited more than a second in the inbox
        await().atMost(WAIT).until(() -> db.queryLong("SELECT count(*) FROM " + schema.schema() + ".inbox_event"
                + " WHERE consumer = '" + consumer + "' AND clock_timestamp() - received_at <= interval '1 second'")
                == 0);
        AtomicBoolean flakyFailed = new AtomicBoolean();
        InboxWorker worker = start(worker((c, e) -> {
            if (e.eventId().equals(flaky.eventId()) && flakyFailed.compareAndSet(false, true)) {
                throw new IllegalStateException("transient failure (test)");
            }
            if (e.eventId().equals(poison.eventId())) {
                throw new OutboxException("malformed payload (test)"); // permanent: parks at once
            }
            if (e.eventType().equals("Slow")) {
                pgSleep(c, 0.2);
            }
        }).listener(new MicrometerInboxListener(registry)));

        await().atMost(WAIT).until(() -> counter(MicrometerInboxListener.PROCESSED) == 14
                && counter(MicrometerInboxListener.PARKED) == 1);
        assertThat(counter(MicrometerInboxListener.FAILURES, "kind", "transient")).isEqualTo(1);
        assertThat(counter(MicrometerInboxListener.FAILURES, "kind", "permanent")).isEqualTo(1);
        assertThat(counter(MicrometerInboxListener.FAILURES, "kind", "database")).isZero();
        assertThat(counter(MicrometerInboxListener.DEAD)).isZero();
        InboxWorker.InboxStats stats = worker.stats();
        assertThat(stats.processed()).isEqualTo(14);
        assertThat(stats.failedAttempts()).isEqualTo(2);
        assertThat(stats.parked()).isEqualTo(1);

        Timer handler = timer(MicrometerInboxListener.HANDLER_DURATION);
        assertThat(handler.count()).isEqualTo(14);
        assertThat(handler.totalTime(TimeUnit.MILLISECONDS)).as("the slow handler's 200 ms are in it")
                .isGreaterThanOrEqualTo(200);
        Timer latency = timer(MicrometerInboxListener.RECEIVE_TO_PROCESSED);
        assertThat(latency.count()).isEqualTo(14);
        assertThat(latency.totalTime(TimeUnit.MILLISECONDS)).as("every event waited over a second before the worker")
                .isGreaterThanOrEqualTo(14 * 1_000);
        var batchSize = registry.get(MicrometerInboxListener.BATCH_SIZE).tags("consumer", consumer).summary();
        assertThat(batchSize.count()).isEqualTo(stats.batches()).isPositive();
        assertThat(batchSize.totalAmount()).as("each processed or failed attempt was in a batch")
                .isGreaterThanOrEqualTo(16);
        for (String phase : List.of("claim", "handle", "mark")) {
            assertThat(timer(MicrometerInboxListener.BATCH_DURATION, "phase", phase).count())
                    .isEqualTo(batchSize.count());
        }
        // low cardinality: consumer, and kind or phase where they belong; never an event id, key or type
        for (Meter m : registry.getMeters()) {
            assertThat(m.getId().getName()).startsWith("txoutbox.inbox.");
            assertThat(m.getId().getTags()).extracting(Tag::getKey).contains("consumer")
                    .isSubsetOf("consumer", "kind", "phase");
        }
    }

    @Test
    void dead_events_and_loop_failures_are_counted() throws Exception {
        InboxMessage poison = message("p", "Poison");
        AtomicBoolean brokeTheConnection = new AtomicBoolean();
        InboxMessage breaker = message("b", "Seq");
        receive(message("p", "Seq"), poison, message("p", "Seq"), breaker);
        InboxWorker worker = start(worker((c, e) -> {
            if (e.eventId().equals(poison.eventId())) {
                throw new OutboxException("malformed payload (test)");
            }
            if (e.eventId().equals(breaker.eventId()) && brokeTheConnection.compareAndSet(false, true)) {
                c.setAutoCommit(true); // forbidden: the lane rolls back, reconnects and goes on
            }
        }).failurePolicy(FailurePolicy.DEAD_LETTER_AND_CONTINUE).listener(new MicrometerInboxListener(registry)));

        await().atMost(WAIT).until(() -> counter(MicrometerInboxListener.PROCESSED) == 3
                && counter(MicrometerInboxListener.DEAD) == 1);
        assertThat(counter(MicrometerInboxListener.FAILURES, "kind", "permanent")).isEqualTo(1);
        assertThat(counter(MicrometerInboxListener.FAILURES, "kind", "database")).isEqualTo(1)
                .isEqualTo(worker.stats().loopErrors());
        assertThat(counter(MicrometerInboxListener.PARKED)).isZero();
        assertThat(worker.stats().dead()).isEqualTo(1);
    }

    @Test
    void a_listener_that_throws_never_stops_the_worker() throws Exception {
        AtomicLong calls = new AtomicLong();
        InboxListener broken = new InboxListener() {
            @Override
            public void batchCompleted(int size, long claimNanos, long handleNanos, long markNanos) {
                calls.incrementAndGet();
                throw new IllegalStateException("broken listener");
            }

            @Override
            public void processed(String eventType, long handlerNanos, long receiveToProcessedNanos) {
                calls.incrementAndGet();
                throw new IllegalStateException("broken listener");
            }
        };
        InboxWorker worker = start(worker((c, e) -> { }).listener(broken));
        for (int i = 0; i < 10; i++) {
            receive(message("k" + i, "Seq"));
            worker.nudge();
        }
        await().atMost(WAIT).until(() -> worker.stats().processed() == 10);
        assertThat(calls.get()).as("the listener was called and threw every time").isGreaterThanOrEqualTo(11);
        assertThat(worker.stats().loopErrors()).isZero();
        assertThat(InboxAdmin.create(db.dataSource(), schema).pendingCount(consumer)).isZero();
        assertThatThrownBy(() -> InboxWorker.builder().dataSource(db.dataSource()).consumer(consumer)
                .defaultHandler((c, e) -> { }).listener(null).build()).hasMessageContaining("inboxWorker.listener");
    }

    @Test
    void gauges_rise_and_fall_with_the_inbox_and_read_nan_while_it_cannot_be_read() throws Exception {
        AtomicBoolean broken = new AtomicBoolean();
        DataSource switchable = (DataSource) Proxy.newProxyInstance(getClass().getClassLoader(),
                new Class<?>[] {DataSource.class}, (proxy, method, args) -> {
                    if (broken.get() && method.getName().equals("getConnection")) {
                        throw new SQLException("connection refused (test)", "08001");
                    }
                    try {
                        return method.invoke(db.dataSource(), args);
                    } catch (InvocationTargetException e) {
                        throw e.getCause();
                    }
                });
        InboxMeterBinder binder = new InboxMeterBinder(switchable, schema, Duration.ofSeconds(1));
        closeables.add(binder);
        binder.bindTo(registry);
        InboxMessage poison = message("p", "Poison");
        receive(message("k1", "Seq"), message("k2", "Seq"), message("k3", "Seq"), poison, message("p", "Seq"));

        String[] tags = {"inbox", schema.schema() + ".inbox_event", "consumer", consumer};
        await().atMost(WAIT).until(() -> registry.find(InboxMeterBinder.PENDING).tags(tags).gauge() != null);
        Gauge pending = registry.get(InboxMeterBinder.PENDING).tags(tags).gauge();
        Gauge age = registry.get(InboxMeterBinder.EVENT_AGE).tags(tags).gauge();
        Gauge parked = registry.get(InboxMeterBinder.PARKED_KEYS).tags(tags).gauge();
        Gauge dead = registry.get(InboxMeterBinder.DEAD_EVENTS).tags(tags).gauge();
        assertThat(age.getId().getBaseUnit()).isEqualTo("seconds");
        // no worker yet: everything waits, and the oldest event ages
        await().atMost(WAIT).until(() -> pending.value() == 5.0 && age.value() > 1.0);
        assertThat(parked.value()).isZero();
        assertThat(dead.value()).isZero();

        start(worker((c, e) -> {
            if (e.eventId().equals(poison.eventId())) {
                throw new OutboxException("malformed payload (test)");
            }
        }));
        // the poison event parks its key; the event behind it stays pending
        await().atMost(WAIT).until(() -> parked.value() == 1.0 && pending.value() == 1.0);
        InboxAdmin admin = InboxAdmin.create(db.dataSource(), schema);
        assertThat(admin.backlog()).filteredOn(b -> b.consumer().equals(consumer)).singleElement()
                .satisfies(b -> {
                    assertThat(b.pending()).isEqualTo(1);
                    assertThat(b.parkedKeys()).isEqualTo(1);
                    assertThat(b.deadEvents()).isZero();
                    assertThat(b.oldestPendingAge()).isGreaterThan(Duration.ofSeconds(1));
                });

        broken.set(true);
        await().atMost(WAIT).until(() -> Double.isNaN(pending.value()) && Double.isNaN(dead.value()));
        broken.set(false);

        assertThat(admin.skip(consumer, poison.eventId(), "test")).isTrue(); // dead; the key moves on
        await().atMost(WAIT).until(() -> pending.value() == 0.0 && age.value() == 0.0 && parked.value() == 0.0
                && dead.value() == 1.0);
        assertThatThrownBy(() -> binder.bindTo(registry)).hasMessageContaining("bound already");
    }
}
