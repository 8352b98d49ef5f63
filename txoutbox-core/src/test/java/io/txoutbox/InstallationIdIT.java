package io.txoutbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.txoutbox.spi.OutboxRecord;
import io.txoutbox.spi.SendResult;
import io.txoutbox.spi.Transport;
import io.txoutbox.spi.TransportLane;
import io.txoutbox.testing.postgres.PostgresExtension;
import io.txoutbox.testing.postgres.TestDatabase;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** Schema version 8: the outbox's installation id, made once by migrate, and the lanes the relay hands over. */
class InstallationIdIT {

    @RegisterExtension
    static final PostgresExtension postgres = new PostgresExtension();

    private static UUID installationId(TestDatabase db, OutboxSchema schema) throws Exception {
        try (Connection c = db.connect(); Statement st = c.createStatement();
                ResultSet rs = st.executeQuery("SELECT id FROM " + schema.schema() + "." + schema.outboxTable()
                        + "_installation")) {
            assertThat(rs.next()).isTrue();
            UUID id = rs.getObject(1, UUID.class);
            assertThat(rs.next()).as("one row").isFalse();
            return id;
        }
    }

    /** Records the lanes it is handed, delivers everything. */
    private static final class LaneRecorder implements Transport {
        final Set<TransportLane> lanes = ConcurrentHashMap.newKeySet();

        @Override
        public CompletionStage<List<SendResult>> send(String lane, List<OutboxRecord> batch) {
            throw new AssertionError("the relay sends with its TransportLane, not a bare name: " + lane);
        }

        @Override
        public CompletionStage<List<SendResult>> send(TransportLane lane, List<OutboxRecord> batch) {
            lanes.add(lane);
            return CompletableFuture.completedFuture(batch.stream().map(r -> SendResult.delivered()).toList());
        }
    }

    @Test
    void migrate_makes_one_id_per_outbox_table_keeps_it_and_the_relay_hands_it_to_the_transport() throws Exception {
        TestDatabase db = postgres.database();
        String s = db.schema() + "_ids";
        OutboxSchema orders = OutboxSchema.builder().schema(s).build();
        OutboxSchema billing = OutboxSchema.builder().schema(s).outboxTable("billing_event").build();
        orders.migrate(db.dataSource());
        billing.migrate(db.dataSource());
        UUID id = installationId(db, orders);
        orders.migrate(db.dataSource());
        assertThat(installationId(db, orders)).as("survives another migrate").isEqualTo(id);
        assertThat(installationId(db, billing)).as("another outbox table, another id").isNotEqualTo(id);
        assertThatThrownBy(() -> db.execute("INSERT INTO " + s + ".outbox_event_installation (id) VALUES "
                + "(gen_random_uuid())")).as("one row only").isNotNull();

        LaneRecorder transport = new LaneRecorder();
        Outbox outbox = Outbox.builder().schema(orders).build();
        try (Connection c = db.connect()) {
            c.setAutoCommit(false);
            for (int k = 0; k < 20; k++) {
                outbox.publish(c, OutboxMessage.builder().topic("t").aggregate("A", "k" + k).eventType("E")
                        .jsonPayload("{}").build());
            }
            c.commit();
        }
        try (PollingRelay relay = PollingRelay.builder().dataSource(db.dataSource()).schema(orders)
                .transport(transport).name("orders-relay").lanes(2).pollInterval(Duration.ofMillis(20)).build()
                .start()) {
            await().atMost(Duration.ofSeconds(30)).until(() -> relay.stats().published() == 20);
            assertThat(transport.lanes).isNotEmpty().allSatisfy(lane -> {
                assertThat(lane.installationId()).isEqualTo(id);
                assertThat(lane.fencingKey()).isEqualTo(id + "-" + lane.index());
                assertThat(lane.name()).isEqualTo("orders-relay-" + lane.index());
                assertThat(lane.outbox()).endsWith("/" + s + ".outbox_event");
                assertThat(lane.instance()).isEqualTo(relay.instanceId());
            });
        }
    }

    @Test
    void a_relay_on_a_schema_without_the_installation_id_refuses_to_start_and_says_to_migrate() {
        TestDatabase db = postgres.database();
        OutboxSchema schema = OutboxSchema.builder().schema(db.schema() + "_old").build();
        schema.migrate(db.dataSource());
        db.execute("DROP TABLE " + schema.schema() + ".outbox_event_installation");
        PollingRelay relay = PollingRelay.builder().dataSource(db.dataSource()).schema(schema)
                .transport(new LaneRecorder()).build();
        try {
            assertThatThrownBy(relay::start).isInstanceOf(OutboxException.class)
                    .hasMessageContaining("older than version 8").hasMessageContaining("OutboxSchema.migrate");
        } finally {
            relay.close();
        }
    }
}
