package io.txoutbox.test;

import static org.assertj.core.api.Assertions.assertThat;

import io.txoutbox.Inbox;
import io.txoutbox.InboxMessage;
import io.txoutbox.InboxWorker;
import io.txoutbox.Outbox;
import io.txoutbox.OutboxHealth;
import io.txoutbox.OutboxMessage;
import io.txoutbox.OutboxSchema;
import io.txoutbox.PollingRelay;
import io.txoutbox.spi.InboxListener;
import io.txoutbox.spi.OutboxRecord;
import io.txoutbox.testing.net.TransactionPoolingProxy;
import io.txoutbox.testing.postgres.PostgresExtension;
import io.txoutbox.testing.postgres.TestDatabase;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BooleanSupplier;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * The relay and the inbox worker behind a connection pooler in transaction mode ({@link TransactionPoolingProxy},
 * like PgBouncer {@code pool_mode=transaction}): their lane ownership is a session advisory lock, which stays on a
 * backend their later statements no longer run on. They must refuse to run, saying why, instead of working as if
 * they owned their lanes; the business writer's {@code publish} works through the pooler.
 */
@Timeout(120)
class ConnectionPoolerIT {

    private static final String CAUSE = "a connection pooler in transaction or statement mode";
    private static final String FIX = "pool_mode=session";

    @RegisterExtension
    static final PostgresExtension postgres = new PostgresExtension();

    private TestDatabase db;
    private OutboxSchema schema;
    private TransactionPoolingProxy proxy;
    private final List<AutoCloseable> closing = new ArrayList<>();

    @BeforeEach
    void setUp(TestInfo info) {
        db = postgres.database();
        schema = OutboxSchema.builder().schema(db.schema())
                .outboxTable("pool_" + Math.abs(info.getTestMethod().orElseThrow().getName().hashCode() % 10_000))
                .shards(4).build();
        schema.migrate(db.dataSource());
        proxy = TransactionPoolingProxy.start("127.0.0.1", db.server().port(), 4);
    }

    @AfterEach
    void tearDown() throws Exception {
        for (int i = closing.size() - 1; i >= 0; i--) {
            closing.get(i).close();
        }
        proxy.close();
    }

    /** This schema's database through the pooler, with prepareThreshold=0 as behind PgBouncer. */
    private DataSource pooled() {
        PGSimpleDataSource ds = new PGSimpleDataSource();
        ds.setUrl(proxy.jdbcUrl(db.jdbcUrl()));
        ds.setUser(db.server().user());
        ds.setPassword(db.server().password());
        return ds;
    }

    private void publish(DataSource ds, int n, String tag) throws Exception {
        Outbox outbox = Outbox.builder().schema(schema).build();
        try (Connection c = ds.getConnection()) {
            c.setAutoCommit(false);
            for (int i = 0; i < n; i++) {
                outbox.publish(c, OutboxMessage.builder().topic("orders").aggregate("Order", tag + (i % 10))
                        .eventType("E").jsonPayload("{}").build());
            }
            c.commit();
        }
    }

    private PollingRelay relay(DataSource ds, InMemoryTransport transport) {
        PollingRelay r = PollingRelay.builder().dataSource(ds).schema(schema).transport(transport).lanes(1)
                .pollInterval(Duration.ofMillis(20)).build();
        closing.add(r);
        return r;
    }

    private long count(String where) {
        return db.queryLong("SELECT count(*) FROM " + schema.qualifiedOutboxTable() + " WHERE " + where);
    }

    private static boolean waitFor(BooleanSupplier condition, Duration max) throws InterruptedException {
        long deadline = System.nanoTime() + max.toNanos();
        while (System.nanoTime() < deadline) {
            if (condition.getAsBoolean()) {
                return true;
            }
            Thread.sleep(20);
        }
        return condition.getAsBoolean();
    }

    private static List<UUID> ids(InMemoryTransport t) {
        return t.delivered().stream().map(OutboxRecord::eventId).toList();
    }

    private static int duplicates(List<UUID> a, List<UUID> b) {
        Set<UUID> seen = new HashSet<>();
        int dup = 0;
        for (UUID id : a) {
            dup += seen.add(id) ? 0 : 1;
        }
        for (UUID id : b) {
            dup += seen.add(id) ? 0 : 1;
        }
        return dup;
    }

    @Test
    void two_relays_behind_a_transaction_pooler_refuse_to_start_naming_the_pooler_and_send_nothing_twice()
            throws Exception {
        publish(db.dataSource(), 200, "k");
        InMemoryTransport ta = new InMemoryTransport();
        InMemoryTransport tb = new InMemoryTransport();
        PollingRelay a = relay(pooled(), ta).start();
        PollingRelay b = relay(pooled(), tb).start();
        int[] maxOwners = new int[1];
        boolean refused = waitFor(() -> {
            maxOwners[0] = Math.max(maxOwners[0], a.stats().lanesOwned() + b.stats().lanesOwned());
            return a.failure().isPresent() && b.failure().isPresent();
        }, Duration.ofSeconds(10));
        String seen = "relays a and b owned " + maxOwners[0] + " lane(s) of 1 at once; delivered a="
                + ta.delivered().size() + " b=" + tb.delivered().size() + ", " + duplicates(ids(ta), ids(tb))
                + " sent twice, " + count("state = 'PUBLISHED'") + " marked published; failures a="
                + a.failure().map(Throwable::getMessage).orElse("none") + ", b="
                + b.failure().map(Throwable::getMessage).orElse("none");
        assertThat(refused).as(seen).isTrue();
        assertThat(a.failure().orElseThrow()).hasMessageContaining(CAUSE).hasMessageContaining(FIX)
                .hasMessageContaining("relay 'relay'");
        assertThat(b.failure().orElseThrow()).hasMessageContaining(CAUSE);
        assertThat(duplicates(ids(ta), ids(tb))).as(seen).isZero();
        assertThat(maxOwners[0]).as(seen).isLessThanOrEqualTo(1);
        waitFor(() -> a.stats().lanesOwned() + b.stats().lanesOwned() == 0, Duration.ofSeconds(5));
        assertThat(a.stats().lanesOwned() + b.stats().lanesOwned()).isZero();
        OutboxHealth.Result health = OutboxHealth.builder().dataSource(db.dataSource()).schema(schema).relay(a)
                .build().check();
        assertThat(health.up()).isFalse();
        assertThat(String.join("; ", health.reasons())).contains(CAUSE);
        // refused, not lost: a relay connected directly delivers every event, once the pooler's server connections
        // are gone (a refused lane's lock can stay on the pooled backend that took it, docs/operations.md "Connection poolers")
        a.close();
        b.close();
        proxy.close();
        InMemoryTransport direct = new InMemoryTransport();
        relay(db.dataSource(), direct).start();
        waitFor(() -> count("state = 'PENDING'") == 0, Duration.ofSeconds(30));
        assertThat(count("state = 'PENDING'")).isZero();
    }

    @Test
    void a_relay_whose_session_moves_to_another_backend_after_it_took_its_lane_is_stopped_at_the_next_mark()
            throws Exception {
        proxy.sessionMode(true); // session pooling: the relay owns its lane, rightly
        InMemoryTransport transport = new InMemoryTransport();
        PollingRelay relay = relay(pooled(), transport).start();
        publish(db.dataSource(), 20, "m");
        transport.awaitDelivered(r -> true, 20, Duration.ofSeconds(30));
        waitFor(() -> count("state = 'PUBLISHED'") == 20, Duration.ofSeconds(10));
        assertThat(count("state = 'PUBLISHED'")).isEqualTo(20);
        assertThat(relay.failure()).isEmpty();
        // the pooler hands the relay's connections to other backends; the lane lock stays on the old one
        proxy.moveSessions();
        publish(db.dataSource(), 20, "n");
        boolean refused = waitFor(() -> relay.failure().isPresent(), Duration.ofSeconds(10));
        String seen = "after the move: delivered " + transport.delivered().size() + " of 40, "
                + count("state = 'PUBLISHED'") + " marked published, lanes owned " + relay.stats().lanesOwned()
                + ", failure " + relay.failure().map(Throwable::getMessage).orElse("none");
        assertThat(refused).as(seen).isTrue();
        assertThat(relay.failure().orElseThrow()).hasMessageContaining(CAUSE).hasMessageContaining(FIX);
        // the mark on the other backend did not commit: at most the batch in flight is sent again later
        assertThat(count("state = 'PUBLISHED'")).as(seen).isEqualTo(20);
        assertThat(transport.delivered().size()).as(seen).isLessThanOrEqualTo(40);
        waitFor(() -> relay.stats().lanesOwned() == 0, Duration.ofSeconds(5));
        assertThat(relay.stats().lanesOwned()).isZero();
    }

    @Test
    void an_inbox_worker_behind_a_transaction_pooler_refuses_to_start_and_commits_no_effect() throws Exception {
        Inbox inbox = Inbox.create(schema);
        String consumer = "pooled-" + UUID.randomUUID();
        db.execute("CREATE TABLE pool_effect (id bigserial PRIMARY KEY, event_id uuid NOT NULL)");
        List<InboxMessage> messages = new ArrayList<>();
        for (int i = 0; i < 20; i++) {
            messages.add(InboxMessage.builder(UUID.randomUUID()).key("k" + (i % 4)).eventType("E")
                    .payload(Integer.toString(i).getBytes(StandardCharsets.UTF_8)).build());
        }
        try (Connection c = db.connect()) {
            c.setAutoCommit(false);
            inbox.receive(c, consumer, messages);
            c.commit();
        }
        AtomicReference<Throwable> failed = new AtomicReference<>();
        InboxWorker worker = InboxWorker.builder().dataSource(pooled()).schema(schema).consumer(consumer).lanes(1)
                .pollInterval(Duration.ofMillis(20)).handler("E", (c, e) -> {
                    try (var ps = c.prepareStatement("INSERT INTO " + db.schema() + ".pool_effect (event_id) "
                            + "VALUES (?)")) {
                        ps.setObject(1, e.eventId());
                        ps.executeUpdate();
                    }
                }).listener(new InboxListener() {
                    @Override
                    public void loopFailed(Throwable error) {
                        failed.compareAndSet(null, error);
                    }
                }).build();
        closing.add(worker);
        worker.start();
        boolean refused = waitFor(() -> failed.get() != null && failed.get().getMessage().contains(CAUSE),
                Duration.ofSeconds(10));
        String seen = "processed " + worker.stats().processed() + " of 20 through the pooler, "
                + db.queryLong("SELECT count(*) FROM " + db.schema() + ".pool_effect") + " effects committed, lanes "
                + "owned " + worker.stats().lanesOwned() + ", loop failure " + failed.get();
        assertThat(refused).as(seen).isTrue();
        assertThat(failed.get()).hasMessageContaining(FIX).hasMessageContaining("inbox worker");
        assertThat(db.queryLong("SELECT count(*) FROM " + db.schema() + ".pool_effect")).as(seen).isZero();
        waitFor(() -> worker.stats().lanesOwned() == 0, Duration.ofSeconds(5));
        assertThat(worker.stats().lanesOwned()).isZero();
    }

    @Test
    void publish_and_receive_work_through_a_transaction_pooler() throws Exception {
        DataSource ds = pooled();
        publish(ds, 30, "p");
        // and a rolled-back publish leaves nothing, also through the pooler
        Outbox outbox = Outbox.builder().schema(schema).build();
        try (Connection c = ds.getConnection()) {
            c.setAutoCommit(false);
            outbox.publish(c, OutboxMessage.builder().topic("orders").aggregate("Order", "rolled-back")
                    .eventType("E").jsonPayload("{}").build());
            c.rollback();
        }
        assertThat(count("true")).isEqualTo(30);
        assertThat(proxy.assignments()).isGreaterThanOrEqualTo(2);
        InMemoryTransport transport = new InMemoryTransport();
        relay(db.dataSource(), transport).start();
        List<OutboxRecord> got = transport.awaitDelivered(r -> true, 30, Duration.ofSeconds(30));
        assertThat(got).hasSize(30);
        // the inbox's receive too: INSERTs in the caller's transaction, a repeated event id dropped
        Inbox inbox = Inbox.create(schema);
        InboxMessage m = InboxMessage.builder(UUID.randomUUID()).key("r").eventType("E")
                .payload("1".getBytes(StandardCharsets.UTF_8)).build();
        for (int i = 0; i < 2; i++) {
            try (Connection c = ds.getConnection()) {
                c.setAutoCommit(false);
                inbox.receive(c, "pooled-receiver", List.of(m));
                c.commit();
            }
        }
        assertThat(db.queryLong("SELECT count(*) FROM " + db.schema() + ".inbox_event"
                + " WHERE consumer = 'pooled-receiver'")).isEqualTo(1);
    }
}
