package io.txoutbox.test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.txoutbox.Outbox;
import io.txoutbox.OutboxMessage;
import io.txoutbox.OutboxSchema;
import io.txoutbox.OutboxStatus;
import io.txoutbox.PollingRelay;
import io.txoutbox.spi.OutboxRecord;
import io.txoutbox.spi.SendResult;
import io.txoutbox.spi.Transport;
import io.txoutbox.testing.postgres.PostgresExtension;
import io.txoutbox.testing.postgres.TestDatabase;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.sql.Timestamp;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The lane's heartbeat: while the lane waits outside the database (a send call that blocks, a send whose stage
 * completes late), its session runs a statement at least every third of the lease. Measured on the server: the
 * {@code query_start} of the lane's backend in {@code pg_stat_activity}, sampled every 50 ms during a wait of 1.5
 * leases. {@code RelayLeaseWaitsIT} shows the lease is kept through such waits; this pins the interval itself.
 */
class RelayHeartbeatIT {

    @RegisterExtension
    static final PostgresExtension postgres = new PostgresExtension();

    private static final Duration LEASE = Duration.ofSeconds(3);
    private static final Duration SLOW = Duration.ofMillis(4_500);
    /** A third of the lease, plus the keeper's own slack and the sampling. */
    private static final long MAX_GAP_MS = LEASE.toMillis() / 3 + 350;

    private TestDatabase db;
    private OutboxSchema schema;
    private PollingRelay relay;
    private final InMemoryTransport memory = new InMemoryTransport();

    @AfterEach
    void tearDown() {
        if (relay != null) {
            relay.close();
        }
    }

    /** The first send is slow: its call blocks for {@link #SLOW}, or its stage completes after it. */
    private final class SlowFirst implements Transport {
        final CountDownLatch started = new CountDownLatch(1);
        final CountDownLatch done = new CountDownLatch(1);
        private final boolean blocking;
        private final AtomicInteger sends = new AtomicInteger();

        SlowFirst(boolean blocking) {
            this.blocking = blocking;
        }

        @Override
        public CompletionStage<List<SendResult>> send(String lane, List<OutboxRecord> batch) {
            if (sends.getAndIncrement() != 0) {
                return memory.send(lane, batch);
            }
            started.countDown();
            if (blocking) {
                sleep(SLOW);
                done.countDown();
                return memory.send(lane, batch);
            }
            return CompletableFuture.supplyAsync(() -> {
                sleep(SLOW);
                done.countDown();
                return memory.send(lane, batch).toCompletableFuture().join();
            });
        }
    }

    private static void sleep(Duration d) {
        try {
            Thread.sleep(d.toMillis());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** The largest gap, in ms, between statements of the lane's session while the slow send ran. */
    private long maxGapDuringSlowSend(TestInfo info, boolean blocking) throws Exception {
        String name = "hb" + (blocking ? "b" : "a");
        db = postgres.database();
        schema = OutboxSchema.builder().schema(db.schema()).outboxTable(name + "_" + Math.abs(info.getDisplayName()
                .hashCode())).shards(4).build();
        schema.migrate(db.dataSource());
        SlowFirst transport = new SlowFirst(blocking);
        relay = PollingRelay.builder().dataSource(db.dataSource()).schema(schema).transport(transport).name(name)
                .lanes(1).pollInterval(Duration.ofMillis(50)).leaseTimeout(LEASE).sendTimeout(LEASE.multipliedBy(3))
                .build();
        relay.start();
        await().atMost(Duration.ofSeconds(30)).until(() -> relay.stats().lanesOwned() == 1);
        try (Connection c = db.connect()) {
            c.setAutoCommit(false);
            Outbox.builder().schema(schema).build().publish(c, OutboxMessage.builder().topic("orders")
                    .aggregate("Order", "a").eventType("E").jsonPayload("{}").build());
            c.commit();
        }
        assertThat(transport.started.await(30, TimeUnit.SECONDS)).isTrue();
        List<Long> starts = new ArrayList<>();
        long sampleStart = System.currentTimeMillis();
        try (Connection c = db.connect()) {
            c.setAutoCommit(true);
            while (transport.done.getCount() > 0) {
                try (Statement st = c.createStatement(); ResultSet rs = st.executeQuery("SELECT query_start FROM"
                        + " pg_stat_activity WHERE application_name LIKE 'txoutbox-relay " + name + "-0 %'")) {
                    if (rs.next()) {
                        Timestamp t = rs.getTimestamp(1);
                        long ms = t == null ? 0 : t.getTime();
                        if (starts.isEmpty() || starts.get(starts.size() - 1) != ms) {
                            starts.add(ms);
                        }
                    }
                }
                Thread.sleep(50);
            }
        }
        long sampleEnd = System.currentTimeMillis();
        await().atMost(Duration.ofSeconds(30)).until(() -> OutboxStatus.pendingCount(db.dataSource(), schema)
                == 0);
        List<Long> points = new ArrayList<>();
        points.add(Math.max(sampleStart, starts.isEmpty() ? sampleStart : starts.get(0)));
        for (long s : starts) {
            if (s >= sampleStart) {
                points.add(s);
            }
        }
        points.add(sampleEnd);
        long maxGap = 0;
        for (int i = 1; i < points.size(); i++) {
            maxGap = Math.max(maxGap, points.get(i) - points.get(i - 1));
        }
        System.out.printf("RelayHeartbeatIT %s: %d statements in %d ms of a slow send, largest gap %d ms%n",
                blocking ? "blocking call" : "late stage", starts.size(), sampleEnd - sampleStart, maxGap);
        assertThat(relay.stats().fencedMarks()).isZero();
        return maxGap;
    }

    @Test
    void a_send_call_that_blocks_the_lane_gets_a_heartbeat_every_third_of_the_lease(TestInfo info)
            throws Exception {
        assertThat(maxGapDuringSlowSend(info, true)).isLessThan(MAX_GAP_MS);
    }

    @Test
    void a_wait_for_a_late_send_gets_a_heartbeat_every_third_of_the_lease(TestInfo info) throws Exception {
        assertThat(maxGapDuringSlowSend(info, false)).isLessThan(MAX_GAP_MS);
    }
}
