package io.txoutbox.test;

import static org.assertj.core.api.Assertions.assertThat;

import io.txoutbox.Outbox;
import io.txoutbox.OutboxMessage;
import io.txoutbox.OutboxSchema;
import io.txoutbox.PollingRelay;
import io.txoutbox.spi.RelayListener;
import io.txoutbox.testing.postgres.PostgresExtension;
import io.txoutbox.testing.postgres.TestDatabase;
import java.sql.Connection;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The relay's linger end to end: events that commit one after another, each nudging the relay, go out in one or
 * two batches when the lane lingers longer than they take to arrive — where without a linger each nudge is a claim of
 * its own. All of them are delivered, in order.
 */
class RelayLingerIT {

    @RegisterExtension
    static final PostgresExtension postgres = new PostgresExtension();

    private static final int EVENTS = 20;

    @Test
    void events_committed_within_the_linger_go_out_together() throws Exception {
        TestDatabase db = postgres.database();
        OutboxSchema schema = OutboxSchema.builder().schema(db.schema()).outboxTable("linger_outbox").build();
        schema.migrate(db.dataSource());
        InMemoryTransport transport = new InMemoryTransport();
        AtomicInteger batches = new AtomicInteger();
        try (PollingRelay relay = PollingRelay.builder().dataSource(db.dataSource()).schema(schema)
                .transport(transport).lanes(1).pollInterval(Duration.ofSeconds(30)).linger(Duration.ofMillis(500))
                .listener(new RelayListener() {
                    @Override
                    public void batchCompleted(int size, long claimNanos, long sendNanos, long markNanos) {
                        batches.incrementAndGet();
                    }
                }).build()) {
            relay.start();
            Outbox outbox = Outbox.builder().schema(schema).afterPublish(relay::nudge).build();
            long begin = System.nanoTime();
            for (int i = 0; i < EVENTS; i++) {
                try (Connection c = db.connect()) {
                    c.setAutoCommit(false);
                    outbox.publish(c, OutboxMessage.builder().topic("orders").aggregate("Order", "o-1")
                            .eventType("Step" + i).jsonPayload("{\"step\":" + i + "}").build());
                    c.commit();
                }
                Thread.sleep(5);
            }
            long writeMillis = (System.nanoTime() - begin) / 1_000_000;
            List<?> delivered = transport.awaitDelivered(r -> true, EVENTS, Duration.ofSeconds(20));
            assertThat(delivered).hasSize(EVENTS);
            assertThat(transport.delivered()).extracting(r -> r.eventType())
                    .containsExactly(java.util.stream.IntStream.range(0, EVENTS).mapToObj(i -> "Step" + i)
                            .toArray(String[]::new));
            // the writes took well under the linger unless the machine stalled them; then more batches are honest
            int bound = writeMillis < 400 ? 2 : 2 + (int) (writeMillis / 500);
            assertThat(batches.get()).as("batches for %d events written in %d ms, linger 500 ms", EVENTS, writeMillis)
                    .isLessThanOrEqualTo(bound);
        }
    }
}
