package io.txoutbox.test;

import static org.awaitility.Awaitility.await;

import io.txoutbox.Outbox;
import io.txoutbox.OutboxMessage;
import io.txoutbox.OutboxSchema;
import io.txoutbox.PollingRelay;
import io.txoutbox.testing.postgres.PostgresExtension;
import io.txoutbox.testing.postgres.TestDatabase;
import java.sql.Connection;
import java.time.Duration;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Regression: the wake-up channel was {@code txoutbox.<schema>.<table>}, so with long (valid) names it passed
 * PostgreSQL's 63-byte limit: {@code pg_notify} failed with "channel name too long" inside the writer's transaction
 * (aborting it), while the relay's quoted {@code LISTEN} was truncated to another name.
 */
class NotifyChannelIT {

    @RegisterExtension
    static final PostgresExtension postgres = new PostgresExtension();

    @Test
    void notify_on_publish_wakes_the_relay_of_a_table_with_a_long_name() throws Exception {
        TestDatabase db = postgres.database();
        OutboxSchema schema = OutboxSchema.builder().schema(db.schema())
                .outboxTable("orders_outbox_with_a_name_as_long_as_allowed_xyz").shards(4).build();
        schema.migrate(db.dataSource());
        InMemoryTransport transport = new InMemoryTransport();
        Outbox notifying = Outbox.builder().schema(schema).notifyOnPublish(true).build();
        try (PollingRelay relay = PollingRelay.builder().dataSource(db.dataSource()).schema(schema)
                .transport(transport).lanes(1).pollInterval(Duration.ofMinutes(5)).listenNotify(true).build()
                .start()) {
            await().atMost(Duration.ofSeconds(10)).until(() -> relay.stats().lanesOwned() == 1);
            // with a 5-minute poll interval and no nudge only the NOTIFY can deliver it within the wait; the
            // listener connects asynchronously, so write until the first event is picked up
            await().atMost(Duration.ofSeconds(20)).until(() -> {
                UUID id;
                try (Connection c = db.connect()) {
                    c.setAutoCommit(false);
                    id = notifying.publish(c, OutboxMessage.builder().topic("orders").key("k").aggregate("Order", "o-1")
                            .eventType("OrderCreated").jsonPayload("{}").build()).get(0);
                    c.commit();
                }
                try {
                    transport.awaitDelivered(r -> r.eventId().equals(id), Duration.ofSeconds(2));
                    return true;
                } catch (AssertionError notYet) {
                    return false;
                }
            });
        }
    }
}
