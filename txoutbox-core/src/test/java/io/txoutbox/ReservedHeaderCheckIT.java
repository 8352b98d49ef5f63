package io.txoutbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import io.txoutbox.internal.partition.PartitionedOutbox;
import io.txoutbox.testing.postgres.PostgresExtension;
import io.txoutbox.testing.postgres.TestDatabase;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.Map;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Regression (issue 10, item 7): a plain-SQL writer that put a header named like one txoutbox writes itself
 * ({@code event_id}, …, {@code txoutbox*}) into the {@code headers} column got its key parked at the relay, far from
 * the mistake. The outbox table refuses such a row at INSERT (SQLState 23514) with a message naming the header,
 * on plain and time-partitioned tables, whichever came first: the schema version or the conversion.
 */
@Tag("pg-version")
@Tag("pg-edge-majors")
class ReservedHeaderCheckIT {

    @RegisterExtension
    static final PostgresExtension postgres = new PostgresExtension();

    /** A header name as a writer might spell it, and the part of the error message that must name it. */
    private static final Map<String, String> RESERVED = new LinkedHashMap<>();

    static {
        RESERVED.put("event_id", "event_id");
        RESERVED.put("event_type", "event_type");
        RESERVED.put("aggregate_type", "aggregate_type");
        RESERVED.put("aggregate_id", "aggregate_id");
        RESERVED.put("aggregate_version", "aggregate_version");
        RESERVED.put("Event_ID", "other_case");
        RESERVED.put("txoutbox_replay", "txoutbox");
        RESERVED.put("TxOutbox-Trace", "txoutbox");
    }

    private static TestDatabase db() {
        return postgres.database();
    }

    private static OutboxSchema.Builder schema(String name) {
        return OutboxSchema.builder().schema(db().schema() + "_" + name).shards(4);
    }

    private static void insert(OutboxSchema s, String headersJson) throws SQLException {
        try (Connection c = db().connect(); PreparedStatement ps = c.prepareStatement("INSERT INTO "
                + s.qualifiedOutboxTable() + " (topic, partition_key, aggregate_type, aggregate_id, event_type,"
                + " payload, headers) VALUES ('orders', 'k-1', 'Order', '1', 'OrderCreated', '{}', ?::jsonb)")) {
            ps.setString(1, headersJson);
            ps.executeUpdate();
        }
    }

    private static SQLException refused(OutboxSchema s, String headersJson) {
        return catchThrowableOfType(SQLException.class, () -> insert(s, headersJson));
    }

    private static void assertEveryReservedNameIsRefused(OutboxSchema s) {
        long before = db().queryLong("SELECT count(*) FROM " + s.qualifiedOutboxTable());
        for (Map.Entry<String, String> e : RESERVED.entrySet()) {
            SQLException refused = refused(s, "{\"traceparent\": \"00-1-2-01\", \"" + e.getKey() + "\": \"x\"}");
            assertThat((Throwable) refused).as("INSERT with header " + e.getKey()).isNotNull();
            assertThat(refused.getSQLState()).as(e.getKey()).isEqualTo("23514");
            assertThat(refused.getMessage()).as(e.getKey()).contains(e.getValue()).contains("reserved");
        }
        assertThat(db().queryLong("SELECT count(*) FROM " + s.qualifiedOutboxTable())).isEqualTo(before);
    }

    /** The reserved-header constraints of a relation: name → validated. */
    private static Map<String, Boolean> checks(String qualifiedRelation) {
        Map<String, Boolean> out = new LinkedHashMap<>();
        try (Connection c = db().connect(); PreparedStatement ps = c.prepareStatement("SELECT conname, convalidated"
                + " FROM pg_constraint WHERE conrelid = ?::regclass AND contype = 'c' AND conname LIKE"
                + " 'header\\_%\\_is\\_reserved' ORDER BY conname")) {
            ps.setString(1, qualifiedRelation);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    out.put(rs.getString(1), rs.getBoolean(2));
                }
            }
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
        return out;
    }

    /** Every partition of a partitioned table, and the table. */
    private static Iterable<String> relations(OutboxSchema s) {
        java.util.List<String> out = new java.util.ArrayList<>();
        out.add(s.qualifiedOutboxTable());
        try (Connection c = db().connect(); PreparedStatement ps = c.prepareStatement("SELECT inhrelid::regclass::text"
                + " FROM pg_inherits WHERE inhparent = ?::regclass")) {
            ps.setString(1, s.qualifiedOutboxTable());
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    out.add(rs.getString(1));
                }
            }
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
        return out;
    }

    private static void assertAllValidated(OutboxSchema s) {
        for (String relation : relations(s)) {
            assertThat(checks(relation)).as(relation).hasSize(6).doesNotContainValue(false);
        }
    }

    /** Puts a migrated table back to the state before the reserved-header version, as an older release left it. */
    private static void unapplyReservedHeaderVersion(OutboxSchema s) {
        db().execute("DO $$ DECLARE r record; BEGIN FOR r IN SELECT conname FROM pg_constraint WHERE conrelid = '"
                + s.qualifiedOutboxTable() + "'::regclass AND conname LIKE 'header\\_%\\_is\\_reserved' LOOP"
                + " EXECUTE format('ALTER TABLE " + s.qualifiedOutboxTable().replace("'", "''")
                + " DROP CONSTRAINT %I', r.conname); END LOOP; END $$",
                "DELETE FROM \"" + s.schema() + "\".txoutbox_schema_history WHERE version = 7");
    }

    /** Runs a migrate and returns what it logged. */
    private static String migrateLogging(OutboxSchema s) {
        PrintStream err = System.err;
        ByteArrayOutputStream captured = new ByteArrayOutputStream();
        System.setErr(new PrintStream(new TeeStream(err, captured), true, StandardCharsets.UTF_8));
        try {
            s.migrate(db().dataSource());
        } finally {
            System.setErr(err);
        }
        return captured.toString(StandardCharsets.UTF_8);
    }

    @Test
    void a_plain_sql_insert_with_a_reserved_header_name_fails_with_23514_naming_the_header() throws Exception {
        // the longest table name the configuration allows: constraint names must still fit in 63 characters
        OutboxSchema s = schema("plain").outboxTable("o".repeat(48)).build();
        s.migrate(db().dataSource());
        assertEveryReservedNameIsRefused(s);
        insert(s, "{\"traceparent\": \"00-1-2-01\", \"my_event_id\": \"1\", \"eventid\": \"2\", \"content_type\": \"t\","
                + " \"x_txoutbox\": \"3\"}");
        insert(s, "{}");
        assertThat(db().queryLong("SELECT count(*) FROM " + s.qualifiedOutboxTable())).isEqualTo(2);
        assertAllValidated(s);
    }

    @Test
    void a_table_with_violating_rows_migrates_warns_stays_not_valid_and_is_validated_once_they_are_fixed()
            throws Exception {
        OutboxSchema s = schema("legacy").build();
        s.migrate(db().dataSource());
        unapplyReservedHeaderVersion(s);
        insert(s, "{\"event_id\": \"a\"}");
        insert(s, "{\"EVENT_ID\": \"b\"}");
        insert(s, "{\"txoutbox_x\": \"c\"}");
        insert(s, "{\"traceparent\": \"t\"}");

        String log = migrateLogging(s);

        assertThat(log).contains("3 rows").contains("NOT VALID").contains("OutboxAdmin");
        Map<String, Boolean> checks = checks(s.qualifiedOutboxTable());
        assertThat(checks).hasSize(6).containsEntry("header_event_id_is_reserved", false)
                .containsEntry("header_txoutbox_or_other_case_is_reserved", false)
                .containsEntry("header_event_type_is_reserved", true);
        assertEveryReservedNameIsRefused(s); // a NOT VALID constraint still guards every new row
        // The relay parks such a row when it meets it, and an operator requeues or discards it: neither is refused.
        db().execute("UPDATE " + s.qualifiedOutboxTable() + " SET state = 'PARKED', attempts = 1, last_error ="
                + " 'reserved header', failed_at = now() WHERE headers ? 'event_id'");
        db().execute("UPDATE " + s.qualifiedOutboxTable() + " SET state = 'PENDING', attempts = 0"
                + " WHERE headers ? 'event_id'");
        db().execute("UPDATE " + s.qualifiedOutboxTable() + " SET state = 'DISCARDED' WHERE headers ? 'event_id'");

        // the two others are fixed by renaming the header
        db().execute("UPDATE " + s.qualifiedOutboxTable() + " SET headers = jsonb_build_object('legacy_event_id',"
                + " headers->'EVENT_ID') WHERE headers ? 'EVENT_ID'",
                "UPDATE " + s.qualifiedOutboxTable() + " SET headers = jsonb_build_object('x', headers->'txoutbox_x')"
                + " WHERE headers ? 'txoutbox_x'");
        String again = migrateLogging(s);

        assertThat(again).doesNotContain("NOT VALID");
        assertAllValidated(s);
    }

    @Test
    void a_partitioned_outbox_refuses_them_when_the_schema_version_came_before_the_conversion_which_waits_for_violating_rows() throws Exception {
        OutboxSchema plain = schema("v7first").build();
        OutboxSchema partitioned = schema("v7first").partitioned(OutboxPartitioning.daily().ahead(2)).build();
        plain.migrate(db().dataSource());
        unapplyReservedHeaderVersion(plain);
        insert(plain, "{\"aggregate_id\": \"legacy\"}");
        assertThat(migrateLogging(plain)).contains("1 row ").contains("NOT VALID");

        // the conversion needs every check valid: it waits, saying why and what to do; the table works meanwhile
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> partitioned.migrate(db().dataSource()))
                .isInstanceOf(OutboxException.class).hasMessageContaining("not converted")
                .hasMessageContaining("header_aggregate_id_is_reserved=1").hasMessageContaining("migrate again");
        try (Connection c = db().connect()) {
            assertThat(PartitionedOutbox.isPartitioned(c, partitioned)).isFalse();
        }
        assertEveryReservedNameIsRefused(plain);

        // the relay parks the row's key when it reaches it (as its failure UPDATE does), then the conversion goes on
        db().execute("UPDATE " + plain.qualifiedOutboxTable() + " SET state = 'PARKED', attempts = 1, last_error ="
                + " 'reserved header aggregate_id', failed_at = now()");
        partitioned.migrate(db().dataSource());
        try (Connection c = db().connect()) {
            assertThat(PartitionedOutbox.isPartitioned(c, partitioned)).isTrue();
        }
        assertAllValidated(partitioned);
        assertEveryReservedNameIsRefused(partitioned);
    }

    @Test
    void a_partitioned_outbox_refuses_them_when_the_conversion_came_before_the_schema_version() throws Exception {
        OutboxSchema plain = schema("convfirst").build();
        OutboxSchema partitioned = schema("convfirst").partitioned(OutboxPartitioning.daily().ahead(2)).build();
        plain.migrate(db().dataSource());
        unapplyReservedHeaderVersion(plain);
        insert(plain, "{\"event_type\": \"legacy\"}");
        try (Connection c = db().connect()) {
            assertThat(new PartitionedOutbox(partitioned).convert(c, Instant.now())).isTrue();
        }

        assertThat(migrateLogging(partitioned)).contains("1 row ").contains("NOT VALID");
        assertEveryReservedNameIsRefused(partitioned);

        db().execute("UPDATE " + partitioned.qualifiedOutboxTable() + " SET headers = '{}'");
        partitioned.migrate(db().dataSource());
        assertAllValidated(partitioned);
    }

    @Test
    void a_fresh_partitioned_outbox_has_the_constraints_validated_on_every_partition() throws Exception {
        OutboxSchema partitioned = schema("fresh").partitioned(OutboxPartitioning.daily().ahead(2)).build();
        partitioned.migrate(db().dataSource());
        assertEveryReservedNameIsRefused(partitioned);
        insert(partitioned, "{\"traceparent\": \"t\"}");
        assertAllValidated(partitioned);
    }

    /**
     * The online step after a crash between the scripts' commit and the validation (the constraints are NOT VALID,
     * the version is recorded), with another migrate holding the steps, and with the table's lock taken.
     */
    @Test
    void an_unfinished_validation_is_left_to_a_concurrent_migrate_retried_after_a_lock_timeout_and_finished_later()
            throws Exception {
        OutboxSchema s = schema("resume").build();
        s.migrate(db().dataSource());
        // as a crash right after the scripts' commit leaves it
        db().execute(new io.txoutbox.internal.SchemaMigrator(s).render(
                io.txoutbox.internal.SchemaMigrator.load("V7__reserved_headers.sql")));
        assertThat(checks(s.qualifiedOutboxTable())).hasSize(6).doesNotContainValue(true);

        try (Connection other = db().connect(); java.sql.Statement st = other.createStatement()) {
            // another migrate is running the online steps of this table
            st.execute("SELECT pg_advisory_lock(" + 0x74786F73 + ", " + (s.schema() + "." + s.outboxTable())
                    .hashCode() + ")");
            assertThat(migrateLogging(s)).contains("running in another session");
            assertThat(checks(s.qualifiedOutboxTable())).doesNotContainValue(true);
            st.execute("SELECT pg_advisory_unlock_all()");

            // a VACUUM or DDL holds the lock VALIDATE needs: it waits 5 s, then leaves it to the next migrate
            other.setAutoCommit(false);
            st.execute("LOCK TABLE " + s.qualifiedOutboxTable() + " IN SHARE UPDATE EXCLUSIVE MODE");
            assertThat(migrateLogging(s)).contains("stay NOT VALID").contains("waited 5 s");
            assertThat(checks(s.qualifiedOutboxTable())).doesNotContainValue(true);
            insert(s, "{}"); // writers go on meanwhile
            assertThat(refused(s, "{\"event_id\": \"x\"}").getSQLState()).isEqualTo("23514");
            other.commit();
        }
        assertThat(migrateLogging(s)).doesNotContain("NOT VALID");
        assertAllValidated(s);
    }

    @Test
    void racing_migrations_of_a_fresh_table_all_succeed_and_leave_the_constraints_validated() throws Exception {
        OutboxSchema s = schema("race").build();
        int racers = 4;
        java.util.concurrent.CyclicBarrier start = new java.util.concurrent.CyclicBarrier(racers);
        java.util.concurrent.ExecutorService pool = java.util.concurrent.Executors.newFixedThreadPool(racers);
        try {
            java.util.List<java.util.concurrent.Future<?>> results = new java.util.ArrayList<>();
            for (int i = 0; i < racers; i++) {
                results.add(pool.submit(() -> {
                    start.await();
                    s.migrate(db().dataSource());
                    return null;
                }));
            }
            for (java.util.concurrent.Future<?> f : results) {
                f.get(60, java.util.concurrent.TimeUnit.SECONDS);
            }
        } finally {
            pool.shutdownNow();
        }
        assertAllValidated(s);
        assertEveryReservedNameIsRefused(s);
    }

    /** Writes to two streams: what migrate logs still shows in the test's output. */
    private static final class TeeStream extends java.io.OutputStream {
        private final java.io.OutputStream a;
        private final java.io.OutputStream b;

        TeeStream(java.io.OutputStream a, java.io.OutputStream b) {
            this.a = a;
            this.b = b;
        }

        @Override
        public void write(int c) throws java.io.IOException {
            a.write(c);
            b.write(c);
        }

        @Override
        public void write(byte[] buf, int off, int len) throws java.io.IOException {
            a.write(buf, off, len);
            b.write(buf, off, len);
        }
    }
}
