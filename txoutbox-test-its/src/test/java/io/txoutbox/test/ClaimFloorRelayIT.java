package io.txoutbox.test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.txoutbox.Outbox;
import io.txoutbox.OutboxMessage;
import io.txoutbox.OutboxSchema;
import io.txoutbox.PollingRelay;
import io.txoutbox.testing.postgres.PostgresExtension;
import io.txoutbox.testing.postgres.TestDatabase;
import java.sql.Connection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The claim floor through a running relay: a writer whose transaction stays open while later ids commit and are
 * published holds the floor at or below its id, so its row goes out as soon as it commits — not only at the next
 * claim without a floor (every 5 s, {@code ClaimFloor.SWEEP_MILLIS}), which is all that would find it had the floor
 * passed it. Three rounds, so that a floor that passes the open writer fails the test unless all three commits
 * happen to fall just before a sweep.
 */
class ClaimFloorRelayIT {

    @RegisterExtension
    static final PostgresExtension postgres = new PostgresExtension();

    private static final Duration WAIT = Duration.ofSeconds(30);
    /** Well under the sweep's 5 s; a claim follows a commit within one poll (50 ms) with a correct floor. */
    private static final Duration PROMPT = Duration.ofMillis(1_500);

    private final TestDatabase db = postgres.database();
    private final InMemoryTransport memory = new InMemoryTransport();
    private PollingRelay relay;

    @AfterEach
    void tearDown() {
        if (relay != null) {
            relay.close();
        }
    }

    private static OutboxMessage message(String key) {
        return OutboxMessage.builder().topic("orders").aggregate("Order", key).eventType("E").jsonPayload("{}")
                .build();
    }

    private List<UUID> commit(Outbox outbox, int n) throws Exception {
        List<UUID> ids = new ArrayList<>();
        try (Connection c = db.connect()) {
            c.setAutoCommit(false);
            for (int i = 0; i < n; i++) {
                ids.addAll(outbox.publish(c, message("later-" + i)));
            }
            c.commit();
        }
        return ids;
    }

    @Test
    void a_row_of_a_writer_open_while_later_ids_are_published_goes_out_promptly_once_it_commits() throws Exception {
        OutboxSchema schema = OutboxSchema.builder().schema(db.schema()).outboxTable("floor_relay").shards(4).build();
        schema.migrate(db.dataSource());
        Outbox outbox = Outbox.builder().schema(schema).build();
        relay = PollingRelay.builder().dataSource(db.dataSource()).schema(schema).transport(memory).name("cf")
                .lanes(1).pollInterval(Duration.ofMillis(50)).build();
        relay.start();
        await().atMost(WAIT).until(() -> relay.stats().lanesOwned() == 1);
        List<Long> delays = new ArrayList<>();
        for (int round = 0; round < 3; round++) {
            try (Connection writer = db.connect()) {
                writer.setAutoCommit(false);
                UUID open = outbox.publish(writer, message("open-" + round)).get(0); // the lower id, not committed
                List<UUID> later = commit(outbox, 5);
                for (UUID id : later) {
                    memory.awaitDelivered(id, WAIT);
                }
                Thread.sleep(700); // several settlement checks (every 100 ms) of the floor while the writer is open
                assertThat(memory.delivered()).extracting(r -> r.eventId()).doesNotContain(open);
                writer.commit();
                long committedAt = System.nanoTime();
                memory.awaitDelivered(open, WAIT);
                delays.add((System.nanoTime() - committedAt) / 1_000_000);
            }
        }
        assertThat(delays).as("ms from the open writer's commit to its row's delivery, per round")
                .allSatisfy(ms -> assertThat(ms).isLessThan(PROMPT.toMillis()));
    }
}
