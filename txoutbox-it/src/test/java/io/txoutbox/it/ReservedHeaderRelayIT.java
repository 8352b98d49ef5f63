package io.txoutbox.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.txoutbox.EventFilter;
import io.txoutbox.FailurePolicy;
import io.txoutbox.OutboxAdmin;
import io.txoutbox.OutboxSchema;
import io.txoutbox.PollingRelay;
import io.txoutbox.internal.SchemaMigrator;
import io.txoutbox.kafka.KafkaTransport;
import io.txoutbox.testing.kafka.KafkaBroker;
import io.txoutbox.testing.postgres.TestDatabase;
import io.txoutbox.testing.postgres.TestPostgres;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Regression (issue 10, item 7), end to end with the Kafka transport on a real broker: 50 plain-SQL writers that put
 * a reserved header name into the headers column used to get 50 keys parked at the relay. Now their INSERTs fail at
 * once, and the relay parks nothing; a row written before the constraint existed is parked as before, without
 * tripping the constraint on the relay's or the operator's UPDATE.
 *
 * <p>On the default PostgreSQL only (no {@code pg-version} tag): {@code ReservedHeaderCheckIT} checks the constraint,
 * the parking UPDATE and the operator's on every version of the matrix.
 */
class ReservedHeaderRelayIT {

    private static final Duration WAIT = Duration.ofSeconds(60);
    private static final String[] RESERVED = {"event_id", "event_type", "aggregate_type", "aggregate_id",
        "aggregate_version", "txoutbox_trace", "Event_Id"};
    private static KafkaBroker kafka;

    private TestDatabase db;
    private OutboxSchema schema;
    private String topic;
    private PollingRelay relay;

    @BeforeAll
    static void broker() {
        kafka = KafkaBroker.builder().start();
    }

    @AfterAll
    static void stopBroker() {
        kafka.close();
    }

    @BeforeEach
    void setUp() {
        db = TestPostgres.shared().newDatabase("reserved_relay");
        schema = ItSupport.schema(db);
        topic = "orders-" + UUID.randomUUID().toString().substring(0, 8);
        kafka.createTopic(topic, 3);
    }

    @AfterEach
    void tearDown() {
        if (relay != null) {
            relay.close();
        }
        db.close();
    }

    private void startRelay() {
        relay = PollingRelay.builder().dataSource(db.dataSource()).schema(schema)
                .transport(KafkaTransport.builder().bootstrapServers(kafka.bootstrapServers()).build())
                .name("reserved-" + UUID.randomUUID().toString().substring(0, 6)).lanes(2)
                .pollInterval(Duration.ofMillis(50)).failurePolicy(FailurePolicy.PARK_KEY).build().start();
    }

    /** A plain-SQL writer's INSERT; null when it went in, else the error. */
    private SQLException insert(String key, String headersJson) {
        try (Connection c = db.connect(); PreparedStatement ps = c.prepareStatement("INSERT INTO "
                + schema.qualifiedOutboxTable() + " (topic, partition_key, aggregate_type, aggregate_id, event_type,"
                + " payload, headers) VALUES (?, ?, 'Order', ?, 'OrderCreated', '{\"id\": 1}', ?::jsonb)")) {
            ps.setString(1, topic);
            ps.setString(2, key);
            ps.setString(3, key);
            ps.setString(4, headersJson);
            ps.executeUpdate();
            return null;
        } catch (SQLException e) {
            return e;
        }
    }

    @Test
    void fifty_writers_with_reserved_header_names_are_refused_at_insert_and_the_relay_parks_nothing() {
        List<String> refused = new ArrayList<>();
        for (int k = 0; k < 50; k++) {
            String name = RESERVED[k % RESERVED.length];
            SQLException e = insert("k" + k, "{\"" + name + "\": \"x-" + k + "\"}");
            if (e != null && "23514".equals(e.getSQLState())
                    && e.getMessage().contains(name.toLowerCase().startsWith("txoutbox") ? "txoutbox"
                            : name.equals(name.toLowerCase()) ? name : "other_case")) {
                refused.add(name);
            }
            assertThat((Throwable) insert("k" + k, "{\"traceparent\": \"00-1-2-01\", \"order_event_id\": \"" + k + "\"}"))
                    .as("a normal INSERT").isNull();
        }
        startRelay();
        OutboxAdmin admin = OutboxAdmin.create(db.dataSource(), schema);
        // every key ends published or parked (before the fix: all 50 parked at their first row)
        await().atMost(WAIT).until(() -> relay.stats().published()
                + admin.list(EventFilter.parked(), 0, 100).size() >= 50);
        assertThat(admin.list(EventFilter.parked(), 0, 100)).as("parked keys").isEmpty();
        assertThat(refused).as("INSERTs refused with 23514 naming the header").hasSize(50);
        assertThat(relay.stats().published()).isEqualTo(50);
        assertThat(relay.stats().parked()).isZero();
        assertThat(relay.stats().loopErrors()).isZero();
        assertThat(db.queryLong("SELECT count(*) FROM " + schema.qualifiedOutboxTable())).isEqualTo(50);
    }

    @Test
    void a_row_written_before_the_constraint_is_parked_discarded_and_then_the_constraint_validates()
            throws Exception {
        // the table as an older release left it: no constraint, and a writer's row with a reserved header
        db.execute("DO $$ DECLARE r record; BEGIN FOR r IN SELECT conname FROM pg_constraint WHERE conrelid = '"
                + schema.qualifiedOutboxTable() + "'::regclass AND conname LIKE 'header\\_%\\_is\\_reserved' LOOP"
                + " EXECUTE format('ALTER TABLE " + schema.qualifiedOutboxTable() + " DROP CONSTRAINT %I',"
                + " r.conname); END LOOP; END $$");
        assertThat((Throwable) insert("legacy", "{\"event_id\": \"mine\"}")).isNull();
        // the schema version's script ran (NOT VALID), and its validation did not yet
        db.execute(new SchemaMigrator(schema).render(SchemaMigrator.load("V7__reserved_headers.sql")));
        for (int k = 0; k < 20; k++) {
            assertThat((Throwable) insert(k % 2 == 0 ? "legacy" : "k" + k, "{}")).isNull();
        }
        startRelay();
        OutboxAdmin admin = OutboxAdmin.create(db.dataSource(), schema);
        await().atMost(WAIT).until(() -> relay.stats().published() == 10
                && admin.list(EventFilter.parked(), 0, 10).size() == 1);
        assertThat(admin.list(EventFilter.parked(), 0, 10).get(0).key()).isEqualTo("legacy");
        assertThat(admin.list(EventFilter.parked(), 0, 10).get(0).lastError()).contains("event_id");
        assertThat(relay.stats().loopErrors()).isZero();

        UUID legacy = admin.list(EventFilter.parked(), 0, 10).get(0).eventId();
        assertThat(admin.discard(legacy, "ops")).isTrue();
        await().atMost(WAIT).until(() -> relay.stats().published() == 20);
        schema.migrate(db.dataSource());
        assertThat(db.queryLong("SELECT count(*) FROM pg_constraint WHERE conrelid = '"
                + schema.qualifiedOutboxTable() + "'::regclass AND conname LIKE 'header\\_%\\_is\\_reserved'"
                + " AND convalidated")).isEqualTo(6);
        assertThat(relay.stats().loopErrors()).isZero();
    }
}
