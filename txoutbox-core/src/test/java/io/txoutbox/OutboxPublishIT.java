package io.txoutbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.txoutbox.internal.Shards;
import io.txoutbox.jackson.JacksonPayloadSerializer;
import io.txoutbox.testing.postgres.PostgresExtension;
import io.txoutbox.testing.postgres.TestDatabase;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

class OutboxPublishIT {

    @RegisterExtension
    static final PostgresExtension postgres = new PostgresExtension();

    static TestDatabase db;
    static OutboxSchema schema;
    static Outbox outbox;

    record OrderCreated(String orderId, int amount) {
    }

    @BeforeAll
    static void setUp() {
        db = postgres.database();
        schema = OutboxSchema.builder().schema(db.schema()).build();
        schema.migrate(db.dataSource());
        db.execute("CREATE TABLE orders (id text PRIMARY KEY, amount int NOT NULL)");
        outbox = Outbox.builder().schema(schema).payloadSerializer(new JacksonPayloadSerializer())
                .maxPayloadBytes(10_000).maxHeaderBytes(200).build();
    }

    @BeforeEach
    void clean() {
        db.execute("TRUNCATE orders", "TRUNCATE " + schema.qualifiedOutboxTable());
    }

    private static OutboxMessage.Builder order(String id) {
        return OutboxMessage.builder().topic("orders").aggregate("Order", id).eventType("OrderCreated")
                .jsonPayload("{\"id\":\"" + id + "\"}");
    }

    private static void insertOrder(Connection c, String id) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("INSERT INTO orders (id, amount) VALUES (?, 1)")) {
            ps.setString(1, id);
            ps.executeUpdate();
        }
    }

    @Test
    void publish_then_commit_writes_exactly_one_row_with_every_field_as_given() throws Exception {
        UUID eventId = UUID.randomUUID();
        try (Connection c = db.connect()) {
            c.setAutoCommit(false);
            insertOrder(c, "o-1");
            List<UUID> ids = outbox.publish(c, OutboxMessage.builder().eventId(eventId).topic("orders.v1")
                    .key("customer-9").aggregate("Order", "o-1").aggregateVersion(3).eventType("OrderCreated")
                    .jsonPayload("{\"id\": \"o-1\", \"amount\": 42}")
                    .header("traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
                    .header("quote\"name", "back\\slash").build());
            c.commit();
            assertThat(ids).containsExactly(eventId);
        }
        try (Connection c = db.connect(); Statement st = c.createStatement();
                ResultSet rs = st.executeQuery("SELECT event_id, topic, partition_key, shard, aggregate_type, "
                        + "aggregate_id, aggregate_version, event_type, payload::text, payload_bytes, "
                        + "headers->>'traceparent', headers->>'quote\"name', state, attempts, published_at, "
                        + "created_at, id FROM " + schema.qualifiedOutboxTable())) {
            assertThat(rs.next()).isTrue();
            assertThat(rs.getObject(1)).isEqualTo(eventId);
            assertThat(rs.getString(2)).isEqualTo("orders.v1");
            assertThat(rs.getString(3)).isEqualTo("customer-9");
            assertThat(rs.getInt(4)).isEqualTo(Shards.of("customer-9", eventId, schema.shards()));
            assertThat(rs.getString(5)).isEqualTo("Order");
            assertThat(rs.getString(6)).isEqualTo("o-1");
            assertThat(rs.getLong(7)).isEqualTo(3L);
            assertThat(rs.getString(8)).isEqualTo("OrderCreated");
            assertThat(rs.getString(9)).isEqualTo("{\"id\": \"o-1\", \"amount\": 42}");
            assertThat(rs.getBytes(10)).isNull();
            assertThat(rs.getString(11)).isEqualTo("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01");
            assertThat(rs.getString(12)).isEqualTo("back\\slash");
            assertThat(rs.getString(13)).isEqualTo("PENDING");
            assertThat(rs.getInt(14)).isZero();
            assertThat(rs.getTimestamp(15)).isNull();
            assertThat(rs.getTimestamp(16)).isNotNull();
            assertThat(rs.next()).as("exactly one row").isFalse();
        }
    }

    @Test
    void publish_then_rollback_leaves_no_row() throws Exception {
        try (Connection c = db.connect()) {
            c.setAutoCommit(false);
            insertOrder(c, "o-2");
            outbox.publish(c, order("o-2").build());
            c.rollback();
        }
        assertThat(db.queryLong("SELECT count(*) FROM " + schema.qualifiedOutboxTable())).isZero();
        assertThat(db.queryLong("SELECT count(*) FROM orders")).isZero();
    }

    @Test
    void many_events_in_one_call_use_one_statement_and_ids_follow_call_order() throws Exception {
        List<OutboxMessage> messages = new ArrayList<>();
        for (int i = 0; i < 500; i++) {
            messages.add(order("o-" + i).build());
        }
        AtomicInteger statements = new AtomicInteger();
        try (Connection real = db.connect()) {
            real.setAutoCommit(false);
            Connection counting = countingStatements(real, statements);
            List<UUID> ids = outbox.publish(counting, messages);
            real.commit();
            assertThat(statements).hasValue(1);
            assertThat(ids).hasSize(500);
            List<UUID> inIdOrder = new ArrayList<>();
            try (Statement st = real.createStatement(); ResultSet rs = st.executeQuery(
                    "SELECT event_id FROM " + schema.qualifiedOutboxTable() + " ORDER BY id")) {
                while (rs.next()) {
                    inIdOrder.add((UUID) rs.getObject(1));
                }
            }
            real.commit();
            assertThat(inIdOrder).containsExactlyElementsOf(ids);
        }
    }

    @Test
    void more_rows_than_one_statement_takes_are_split_in_the_same_transaction() throws Exception {
        List<OutboxMessage> messages = new ArrayList<>();
        for (int i = 0; i < Outbox.MAX_ROWS_PER_STATEMENT * 2 + 5; i++) {
            messages.add(order("o-" + i).build());
        }
        AtomicInteger statements = new AtomicInteger();
        try (Connection real = db.connect()) {
            real.setAutoCommit(false);
            outbox.publish(countingStatements(real, statements), messages);
            real.rollback();
        }
        assertThat(statements).hasValue(3);
        assertThat(db.queryLong("SELECT count(*) FROM " + schema.qualifiedOutboxTable())).isZero();
    }

    @Test
    void object_and_bytes_payloads_and_tombstones() throws Exception {
        UUID objectId;
        UUID bytesId;
        UUID noneId;
        try (Connection c = db.connect()) {
            c.setAutoCommit(false);
            objectId = outbox.publish(c, order("o-3").objectPayload(new OrderCreated("o-3", 7)).build()).get(0);
            bytesId = outbox.publish(c, order("o-4").bytesPayload(new byte[] {0, 1, 2, (byte) 255}).build()).get(0);
            noneId = outbox.publish(c, order("o-5").payload(Payload.none()).build()).get(0);
            c.commit();
        }
        Map<UUID, String> json = new java.util.HashMap<>();
        try (Connection c = db.connect(); Statement st = c.createStatement(); ResultSet rs = st.executeQuery(
                "SELECT event_id, payload::text, encode(payload_bytes, 'hex') FROM "
                        + schema.qualifiedOutboxTable())) {
            while (rs.next()) {
                json.put((UUID) rs.getObject(1), rs.getString(2) + "|" + rs.getString(3));
            }
        }
        assertThat(json.get(objectId)).isEqualTo("{\"amount\": 7, \"orderId\": \"o-3\"}|null");
        assertThat(json.get(bytesId)).isEqualTo("null|000102ff");
        assertThat(json.get(noneId)).isEqualTo("null|null");
    }

    @Test
    void autocommit_connection_is_refused_and_nothing_is_written() throws Exception {
        try (Connection c = db.connect()) {
            assertThat(c.getAutoCommit()).isTrue();
            assertThatThrownBy(() -> outbox.publish(c, order("o-6").build()))
                    .isInstanceOf(OutboxException.class)
                    .hasMessageContaining("autocommit is on")
                    .hasMessageContaining("setAutoCommit(false)")
                    .hasMessageContaining("Nothing was written");
        }
        assertThat(db.queryLong("SELECT count(*) FROM " + schema.qualifiedOutboxTable())).isZero();
    }

    /** Each bad input fails with a clear message and leaves the caller's transaction usable. */
    @Test
    void bad_input_is_rejected_in_the_client_and_the_transaction_still_commits() throws Exception {
        Map<String, Consumer<Connection>> cases = new java.util.LinkedHashMap<>();
        cases.put("topic is missing", c -> outbox.publish(c, order("x").topic(null).build()));
        cases.put("topic is missing ", c -> outbox.publish(c, order("x").topic(" ").build()));
        cases.put("not a valid Kafka topic name", c -> outbox.publish(c, order("x").topic("a/b").build()));
        cases.put("payload is not valid JSON", c -> outbox.publish(c, order("x").jsonPayload("{\"a\":").build()));
        cases.put("\\u0000", c -> outbox.publish(c, order("x").jsonPayload("\"\\u0000\"").build()));
        cases.put("over the limit of 10000 (outbox.maxPayloadBytes)",
                c -> outbox.publish(c, order("x").jsonPayload("\"" + "é".repeat(5000) + "\"").build()));
        cases.put("over the limit of 200 (outbox.maxHeaderBytes)",
                c -> outbox.publish(c, order("x").header("h", "v".repeat(300)).build()));
        cases.put("control character U+0007",
                c -> outbox.publish(c, order("x").header("h", "bell\u0007").build()));
        cases.put("could not be serialized", c -> outbox.publish(c, order("x").objectPayload(new Object() {
            @SuppressWarnings("unused")
            public String getBoom() {
                throw new IllegalStateException("boom");
            }
        }).build()));
        cases.put("messages[1] is null", c -> outbox.publish(c, java.util.Arrays.asList(order("y").build(), null)));
        int n = 0;
        for (Map.Entry<String, Consumer<Connection>> e : cases.entrySet()) {
            String business = "b-" + (n++);
            try (Connection c = db.connect()) {
                c.setAutoCommit(false);
                insertOrder(c, business);
                assertThatThrownBy(() -> e.getValue().accept(c)).as(e.getKey())
                        .isInstanceOf(InvalidMessageException.class).hasMessageContaining(e.getKey().trim());
                insertOrder(c, business + "-after"); // would fail if the transaction were aborted
                c.commit();
            }
        }
        assertThat(db.queryLong("SELECT count(*) FROM orders")).isEqualTo(2L * cases.size());
        assertThat(db.queryLong("SELECT count(*) FROM " + schema.qualifiedOutboxTable()))
                .as("no event of a failed call, not even the valid ones before the bad one").isZero();
    }

    @Test
    void a_duplicate_event_id_is_reported_as_a_database_failure_that_aborted_the_transaction() throws Exception {
        UUID id = UUID.randomUUID();
        try (Connection c = db.connect()) {
            c.setAutoCommit(false);
            outbox.publish(c, order("o-7").eventId(id).build());
            assertThatThrownBy(() -> outbox.publish(c, order("o-8").eventId(id).build()))
                    .isInstanceOf(OutboxException.class).isNotInstanceOf(InvalidMessageException.class)
                    .hasMessageContaining("23505").hasMessageContaining("roll it back")
                    .hasMessageContaining(id.toString());
            c.rollback();
        }
    }

    /** Regression (issue 10, item 8): the second row's unique violation used to abort the caller's transaction. */
    @Test
    void duplicate_event_ids_within_one_call_are_refused_in_the_client_and_the_transaction_still_commits()
            throws Exception {
        UUID id = UUID.randomUUID();
        try (Connection c = db.connect()) {
            c.setAutoCommit(false);
            insertOrder(c, "dup-1");
            List<OutboxMessage> messages = List.of(order("o-1").eventId(id).build(), order("o-2").build(),
                    order("o-3").eventId(id).build());
            assertThatThrownBy(() -> outbox.publish(c, messages))
                    .isInstanceOf(InvalidMessageException.class)
                    .hasMessageContaining(id.toString())
                    .hasMessageContaining("messages[0]").hasMessageContaining("messages[2]");
            insertOrder(c, "dup-2"); // would fail if the transaction were aborted
            c.commit();
        }
        assertThat(db.queryLong("SELECT count(*) FROM orders")).isEqualTo(2);
        assertThat(db.queryLong("SELECT count(*) FROM " + schema.qualifiedOutboxTable())).isZero();
    }

    @Test
    void publish_before_migrate_says_to_migrate() throws Exception {
        Outbox unmigrated = Outbox.builder()
                .schema(OutboxSchema.builder().schema(db.schema()).outboxTable("not_migrated").build()).build();
        try (Connection c = db.connect()) {
            c.setAutoCommit(false);
            assertThatThrownBy(() -> unmigrated.publish(c, order("o-9").build()))
                    .hasMessageContaining("OutboxSchema.migrate");
            c.rollback();
        }
    }

    @Test
    void after_publish_callback_runs_once_per_call() throws Exception {
        AtomicInteger calls = new AtomicInteger();
        Outbox nudging = Outbox.builder().schema(schema).afterPublish(calls::incrementAndGet).build();
        try (Connection c = db.connect()) {
            c.setAutoCommit(false);
            nudging.publish(c, order("o-10").build(), order("o-11").build());
            c.commit();
        }
        assertThat(calls).hasValue(1);
    }

    /** Wraps a connection so that every prepareStatement / createStatement call is counted. */
    static Connection countingStatements(Connection real, AtomicInteger counter) {
        return (Connection) Proxy.newProxyInstance(OutboxPublishIT.class.getClassLoader(),
                new Class<?>[] {Connection.class}, (proxy, method, args) -> {
                    if (method.getName().equals("prepareStatement") || method.getName().equals("createStatement")
                            || method.getName().equals("prepareCall")) {
                        counter.incrementAndGet();
                    }
                    try {
                        return method.invoke(real, args);
                    } catch (java.lang.reflect.InvocationTargetException e) {
                        throw e.getCause();
                    }
                });
    }
}
