package io.txoutbox.test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.txoutbox.Outbox;
import io.txoutbox.OutboxMessage;
import io.txoutbox.OutboxSchema;
import io.txoutbox.PollingRelay;
import io.txoutbox.internal.Shards;
import io.txoutbox.testing.postgres.PostgresExtension;
import io.txoutbox.testing.postgres.TestDatabase;
import java.sql.Connection;
import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A writer built with {@code Outbox.Builder#nudge(relay)} wakes only the relay lane that works the shard it wrote
 * ({@code Shards.of}, the table's generated column computed in Java: {@code SchemaMigrationIT}); the other lanes sleep
 * on, where {@code afterPublish(relay::nudge)} wakes every lane.
 */
class ShardNudgeIT {

    @RegisterExtension
    static final PostgresExtension postgres = new PostgresExtension();

    private static final int LANES = 4;

    @Test
    void a_publish_wakes_the_lane_of_its_shard_and_no_other() throws Exception {
        TestDatabase db = postgres.database();
        OutboxSchema schema = OutboxSchema.builder().schema(db.schema()).outboxTable("nudged").build();
        schema.migrate(db.dataSource());
        InMemoryTransport transport = new InMemoryTransport();
        // a poll interval far beyond the test's waits: a lane that delivers was woken by a nudge
        try (PollingRelay relay = PollingRelay.builder().dataSource(db.dataSource()).schema(schema)
                .transport(transport).lanes(LANES).pollInterval(Duration.ofMinutes(5)).build().start()) {
            await().atMost(Duration.ofSeconds(30)).until(() -> relay.lanes().size() == LANES
                    && relay.lanes().stream().allMatch(l -> l.lastLoopAt() != null));
            Map<Integer, Instant> before = asleep(relay);
            Outbox targeted = Outbox.builder().schema(schema).nudge(relay).build();
            for (int lane = 0; lane < LANES; lane++) {
                String key = keyOfLane(lane, schema.shards());
                write(db, targeted, key);
                transport.awaitDelivered(r -> key.equals(r.key()), 1, Duration.ofSeconds(30));
                // the woken lane looks again for up to 200 ms after the nudge, a turn each, then sleeps long: its
                // last look may come late on a loaded machine, and must not count against the next lane
                Map<Integer, Instant> after = asleep(relay);
                for (int other = 0; other < LANES; other++) {
                    if (other == lane) {
                        assertThat(after.get(other)).as("lane %d, woken", other).isAfter(before.get(other));
                    } else {
                        assertThat(after.get(other)).as("lane %d, not the written shard's", other)
                                .isEqualTo(before.get(other));
                    }
                }
                before = after;
            }
            // the control: afterPublish(relay::nudge) wakes every lane for the same one event
            Outbox everyLane = Outbox.builder().schema(schema).afterPublish(relay::nudge).build();
            Map<Integer, Instant> asleep = before;
            write(db, everyLane, keyOfLane(0, schema.shards()));
            await().atMost(Duration.ofSeconds(30)).until(() -> {
                Map<Integer, Instant> now = lastLoops(relay);
                return now.entrySet().stream().allMatch(e -> e.getValue().isAfter(asleep.get(e.getKey())));
            });
            assertThat(transport.delivered()).hasSize(LANES + 1);
        }
    }

    private static String keyOfLane(int lane, int shards) {
        for (int i = 0; ; i++) {
            String key = "key-" + i;
            if (Shards.of(key, null, shards) % LANES == lane) {
                return key;
            }
        }
    }

    private static void write(TestDatabase db, Outbox outbox, String key) throws Exception {
        try (Connection c = db.connect()) {
            c.setAutoCommit(false);
            outbox.publish(c, OutboxMessage.builder().topic("orders").key(key).aggregate("Order", key)
                    .eventType("Placed").jsonPayload("{}").build());
            c.commit();
        }
    }

    /**
     * Every lane's last loop time once all have stood still for half a second: every lane asleep (the poll interval
     * is 5 min). A lane's loop time is set when it takes the lane and again after its first (empty) claim, which a
     * loaded machine may end well after the lane was taken (the CI run of 9f01a20 saw lane 3's end 168 ms into the
     * first write's check); a woken lane looks again for up to 200 ms after its nudge. A lane woken by mistake still
     * shows: its time differs from the snapshot before.
     */
    private static Map<Integer, Instant> asleep(PollingRelay relay) {
        AtomicReference<Map<Integer, Instant>> settled = new AtomicReference<>();
        await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(100)).until(() -> {
            Map<Integer, Instant> first = lastLoops(relay);
            Thread.sleep(500);
            settled.set(lastLoops(relay));
            return first.equals(settled.get());
        });
        return settled.get();
    }

    private static Map<Integer, Instant> lastLoops(PollingRelay relay) {
        Map<Integer, Instant> loops = new HashMap<>();
        for (PollingRelay.LaneStatus l : relay.lanes()) {
            loops.put(l.lane(), l.lastLoopAt());
        }
        return loops;
    }
}
