package io.txoutbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.txoutbox.testing.postgres.PostgresExtension;
import io.txoutbox.testing.postgres.TestDatabase;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.EnumSet;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The outbox's operator verbs against a real PostgreSQL; rows' states are written with SQL (no relay). */
class OutboxAdminIT {

    @RegisterExtension
    static final PostgresExtension postgres = new PostgresExtension();

    private TestDatabase db;
    private OutboxSchema schema;
    private String t;
    private OutboxAdmin admin;
    private Instant dbNow;

    @BeforeEach
    void setUp(TestInfo info) {
        db = postgres.database();
        schema = OutboxSchema.builder().schema(db.schema())
                .outboxTable("adm_" + Math.abs(info.getTestMethod().orElseThrow().getName().hashCode())).build();
        schema.migrate(db.dataSource());
        t = schema.qualifiedOutboxTable();
        admin = OutboxAdmin.create(db.dataSource(), schema);
        dbNow = Instant.ofEpochMilli(db.queryLong("SELECT (extract(epoch FROM now()) * 1000)::bigint"));
    }

    /** One row; returns its event id. */
    private UUID row(String state, String topic, String type, String key, String createdAgo, String failedAgo) {
        UUID id = UUID.randomUUID();
        db.execute("INSERT INTO " + t + " (event_id, topic, partition_key, aggregate_type, aggregate_id, event_type,"
                + " payload, state, attempts, last_error, created_at, failed_at) VALUES ('" + id + "', '" + topic
                + "', '" + key + "', 'Order', '" + key + "', '" + type + "', '{\"secret\": 1}', '" + state
                + "', 3, 'boom', now() - interval '" + createdAgo + "', "
                + (failedAgo == null ? "NULL" : "now() - interval '" + failedAgo + "'") + ")");
        return id;
    }

    private String col(UUID eventId, String column) {
        try (var c = db.connect(); var ps = c.prepareStatement("SELECT " + column + "::text FROM " + t
                + " WHERE event_id = ?")) {
            ps.setObject(1, eventId);
            try (var rs = ps.executeQuery()) {
                return rs.next() ? rs.getString(1) : "<gone>";
            }
        } catch (java.sql.SQLException e) {
            throw new IllegalStateException(e);
        }
    }

    private long pending() {
        return OutboxStatus.pendingCount(db.dataSource(), schema);
    }

    private static List<UUID> ids(List<FailedEvent> events) {
        return events.stream().map(FailedEvent::eventId).toList();
    }

    @Test
    void filters_select_by_state_topic_type_key_and_time_and_pages_follow_the_id() {
        UUID d1 = row("DEAD", "orders", "OrderCreated", "k1", "3 days", "2 days");
        UUID d2 = row("DEAD", "orders", "OrderPaid", "k2", "1 hour", "30 minutes");
        UUID d3 = row("DEAD", "payments", "OrderCreated", "k1", "1 hour", "10 minutes");
        UUID p1 = row("PARKED", "orders", "OrderCreated", "k3", "2 hours", "1 hour");
        row("PENDING", "orders", "OrderCreated", "k4", "1 hour", null);
        row("PUBLISHED", "orders", "OrderCreated", "k5", "1 hour", null);

        assertThat(ids(admin.list(EventFilter.dead(), 0, 100))).containsExactly(d1, d2, d3);
        assertThat(ids(admin.list(EventFilter.parked(), 0, 100))).containsExactly(p1);
        assertThat(ids(admin.list(EventFilter.deadOrParked().topic("orders"), 0, 100)))
                .containsExactly(d1, d2, p1);
        assertThat(ids(admin.list(EventFilter.dead().eventType("OrderCreated"), 0, 100)))
                .containsExactly(d1, d3);
        assertThat(ids(admin.list(EventFilter.dead().key("k1").topic("payments"), 0, 100)))
                .containsExactly(d3);
        Instant dayAgo = dbNow.minus(Duration.ofDays(1));
        assertThat(ids(admin.list(EventFilter.dead().createdBefore(dayAgo), 0, 100))).containsExactly(d1);
        assertThat(ids(admin.list(EventFilter.dead().createdFrom(dayAgo), 0, 100)))
                .containsExactly(d2, d3);
        assertThat(ids(admin.list(EventFilter.dead().failedFrom(dbNow.minus(Duration.ofMinutes(20))), 0,
                100))).containsExactly(d3);
        assertThat(ids(admin.list(EventFilter.dead().failedFrom(dayAgo)
                .failedBefore(dbNow.minus(Duration.ofMinutes(20))), 0, 100))).containsExactly(d2);

        // keyset pages: no gap, no overlap
        List<FailedEvent> page1 = admin.list(EventFilter.deadOrParked(), 0, 2);
        List<FailedEvent> page2 = admin.list(EventFilter.deadOrParked(), page1.get(1).id(), 2);
        List<FailedEvent> page3 = admin.list(EventFilter.deadOrParked(), page2.get(1).id(), 2);
        assertThat(ids(page1)).containsExactly(d1, d2);
        assertThat(ids(page2)).containsExactly(d3, p1);
        assertThat(page3).isEmpty();
        FailedEvent first = page1.get(0);
        assertThat(first.state()).isEqualTo(FailedState.DEAD);
        assertThat(first.lastError()).isEqualTo("boom");
        assertThat(first.attempts()).isEqualTo(3);
        assertThat(first.failedAt()).isNotNull();
        assertThat(first.operatorAction()).isNull();
        assertThat(first.consumer()).isNull();
        assertThat(first.waiting()).as("not a parked head").isZero();
    }

    @Test
    void a_parked_head_lists_the_events_of_its_key_that_wait_behind_it() {
        UUID head = row("PARKED", "orders", "E", "k1", "1 hour", "1 minute");
        row("PENDING", "orders", "E", "k1", "1 hour", null);
        row("PENDING", "orders", "E", "k1", "1 hour", null);
        row("PENDING", "orders", "E", "k2", "1 hour", null);
        row("PUBLISHED", "orders", "E", "k1", "1 hour", null);
        UUID alone = row("PARKED", "orders", "E", "k3", "1 hour", "1 minute");
        assertThat(admin.list(EventFilter.parked(), 0, 10)).extracting(FailedEvent::eventId, FailedEvent::waiting)
                .containsExactly(org.assertj.core.groups.Tuple.tuple(head, 2L),
                        org.assertj.core.groups.Tuple.tuple(alone, 0L));
    }

    @Test
    void show_gives_the_metadata_and_the_payload_only_when_asked() {
        UUID d = row("DEAD", "orders", "OrderCreated", "k1", "1 hour", "1 minute");
        EventDetails meta = admin.show(d, false).orElseThrow();
        assertThat(meta.eventId()).isEqualTo(d);
        assertThat(meta.state()).isEqualTo("DEAD");
        assertThat(meta.topic()).isEqualTo("orders");
        assertThat(meta.key()).isEqualTo("k1");
        assertThat(meta.lastError()).isEqualTo("boom");
        assertThat(meta.headersJson()).isEqualTo("{}");
        assertThat(meta.consumer()).as("the outbox has no consumers").isNull();
        assertThat(meta.failedAt()).isNotNull();
        assertThat(meta.completedAt()).as("never published").isNull();
        assertThat(meta.payload()).isNull();
        byte[] payload = admin.show(d, true).orElseThrow().payload();
        assertThat(new String(payload, StandardCharsets.UTF_8)).isEqualTo("{\"secret\": 1}");
        assertThat(admin.show(UUID.randomUUID(), true)).isEmpty();
    }

    @Test
    void requeue_one_makes_a_dead_or_parked_event_pending_and_audits_it_other_states_are_untouched() {
        UUID dead = row("DEAD", "orders", "E", "k1", "1 hour", "1 minute");
        UUID parked = row("PARKED", "orders", "E", "k2", "1 hour", "1 minute");
        UUID published = row("PUBLISHED", "orders", "E", "k3", "1 hour", null);
        UUID discarded = row("DISCARDED", "orders", "E", "k4", "1 hour", "1 minute");

        assertThat(admin.requeue(dead, "alice")).isTrue();
        assertThat(admin.requeue(parked, "bob")).isTrue();
        assertThat(admin.requeue(published, "alice")).isFalse();
        assertThat(admin.requeue(discarded, "alice")).isFalse();
        assertThat(admin.requeue(dead, "alice")).as("already pending").isFalse();

        assertThat(col(dead, "state")).isEqualTo("PENDING");
        assertThat(col(dead, "attempts")).isEqualTo("0");
        assertThat(col(dead, "operator_action")).isEqualTo("REQUEUED");
        assertThat(col(dead, "operator_name")).isEqualTo("alice");
        assertThat(db.queryLong("SELECT count(*) FROM " + t + " WHERE event_id = '" + dead
                + "' AND operator_at BETWEEN now() - interval '1 minute' AND now() + interval '1 minute'"))
                .isEqualTo(1);
        assertThat(col(parked, "operator_name")).isEqualTo("bob");
        assertThat(col(published, "state")).isEqualTo("PUBLISHED");
        assertThat(col(published, "operator_action")).isNull();
        assertThat(col(discarded, "state")).isEqualTo("DISCARDED");
        assertThat(pending()).isEqualTo(2);
    }

    @Test
    void discard_is_final_out_of_the_pending_view_and_not_requeued_with_the_dead() {
        UUID parked = row("PARKED", "orders", "E", "k1", "1 hour", "1 minute");
        UUID dead = row("DEAD", "orders", "E", "k2", "1 hour", "1 minute");
        UUID pending = row("PENDING", "orders", "E", "k3", "1 hour", null);

        assertThat(admin.discard(parked, "carol")).isTrue();
        assertThat(admin.discard(pending, "carol")).as("a pending event is not discarded").isFalse();
        assertThat(col(parked, "state")).isEqualTo("DISCARDED");
        assertThat(col(parked, "operator_action")).isEqualTo("DISCARDED");
        assertThat(col(parked, "operator_name")).isEqualTo("carol");
        assertThat(pending()).isEqualTo(1);
        assertThat(admin.list(EventFilter.parked(), 0, 10)).isEmpty();

        assertThat(admin.requeue(EventFilter.dead(), "carol")).isEqualTo(1);
        assertThat(col(dead, "state")).isEqualTo("PENDING");
        assertThat(col(parked, "state")).isEqualTo("DISCARDED");
        assertThat(ids(admin.list(EventFilter.of(EnumSet.of(FailedState.DISCARDED)), 0, 10)))
                .containsExactly(parked);
    }

    @Test
    void requeue_and_discard_by_filter_change_only_matching_rows_across_many_pages() {
        db.execute("INSERT INTO " + t + " (topic, partition_key, aggregate_type, aggregate_id, event_type, state)"
                + " SELECT CASE WHEN g % 2 = 0 THEN 'orders' ELSE 'payments' END, 'k' || g, 'Order', g::text, 'E',"
                + " 'DEAD' FROM generate_series(1, 2500) g");
        UUID parkedOrder = row("PARKED", "orders", "E", "kp", "1 hour", "1 minute");
        assertThat(admin.requeue(EventFilter.dead().topic("orders"), "dave")).isEqualTo(1250);
        assertThat(db.queryLong("SELECT count(*) FROM " + t + " WHERE state = 'PENDING' AND topic = 'orders'"
                + " AND operator_name = 'dave' AND operator_action = 'REQUEUED'")).isEqualTo(1250);
        assertThat(db.queryLong("SELECT count(*) FROM " + t + " WHERE state = 'DEAD' AND topic = 'payments'"))
                .isEqualTo(1250);
        assertThat(col(parkedOrder, "state")).isEqualTo("PARKED");

        assertThat(admin.discard(EventFilter.deadOrParked(), "erin")).isEqualTo(1251);
        assertThat(db.queryLong("SELECT count(*) FROM " + t + " WHERE state = 'DISCARDED'"
                + " AND operator_name = 'erin'")).isEqualTo(1251);
        assertThat(pending()).isEqualTo(1250);
    }

    @Test
    void skip_and_requeue_without_an_operator_are_audited_under_the_database_user() {
        UUID parked = row("PARKED", "orders", "E", "k1", "1 hour", "1 minute");
        assertThat(admin.skip(parked, null)).isTrue();
        assertThat(col(parked, "state")).isEqualTo("DEAD");
        assertThat(col(parked, "last_error")).contains("skipped by an operator");
        assertThat(col(parked, "operator_action")).isEqualTo("SKIPPED");
        assertThat(col(parked, "operator_name")).isEqualTo(currentUser());
        assertThat(admin.skip(parked, null)).as("only a parked event is skipped").isFalse();
        assertThat(admin.requeue(parked, null)).isTrue();
        assertThat(col(parked, "state")).isEqualTo("PENDING");
        assertThat(col(parked, "operator_action")).isEqualTo("REQUEUED");
    }

    private String currentUser() {
        try (var c = db.connect(); var st = c.createStatement(); var rs = st.executeQuery("SELECT current_user")) {
            rs.next();
            return rs.getString(1);
        } catch (java.sql.SQLException e) {
            throw new IllegalStateException(e);
        }
    }

    @Test
    void an_outbox_table_without_the_v3_columns_gets_an_error_that_says_to_migrate() {
        db.execute("ALTER TABLE " + t + " DROP COLUMN operator_action");
        assertThatThrownBy(() -> admin.list(EventFilter.dead(), 0, 10)).isInstanceOf(OutboxException.class)
                .hasMessageContaining("operator_action").hasMessageContaining("run OutboxSchema.migrate");
    }

    @Test
    void bad_arguments_are_refused_with_the_fix() {
        UUID dead = row("DEAD", "orders", "E", "k1", "1 hour", "1 minute");
        assertThatThrownBy(() -> admin.requeue(dead, " ")).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("operator must name who makes the change");
        assertThatThrownBy(() -> admin.discard(dead, "a\nb")).hasMessageContaining("operator must name");
        assertThatThrownBy(() -> admin.list(EventFilter.dead(), 0, 0)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("limit must be between 1 and 10000, was 0");
        assertThatThrownBy(() -> admin.list(EventFilter.dead(), 0, 10_001)).hasMessageContaining("was 10001");
        assertThatThrownBy(() -> admin.list(EventFilter.dead().consumer("billing"), 0, 10))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("applies to inbox events only").hasMessageContaining("use InboxAdmin");
        assertThatThrownBy(() -> admin.requeue(EventFilter.dead().consumer("billing"), "x"))
                .hasMessageContaining("drop consumer(...)");
        assertThatThrownBy(() -> admin.requeue(EventFilter.of(EnumSet.of(FailedState.DISCARDED)), "x"))
                .hasMessageContaining("applies to PARKED or DEAD events");
        assertThatThrownBy(() -> EventFilter.of(EnumSet.noneOf(FailedState.class)))
                .hasMessageContaining("at least one state");
        assertThat(col(dead, "state")).isEqualTo("DEAD");
    }
}
