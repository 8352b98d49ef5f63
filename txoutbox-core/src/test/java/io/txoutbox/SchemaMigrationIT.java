package io.txoutbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.txoutbox.internal.Shards;
import io.txoutbox.testing.postgres.PostgresExtension;
import io.txoutbox.testing.postgres.TestDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

@Tag("pg-version")
class SchemaMigrationIT {

    /** Every schema script, once per outbox table. */
    private static final long SCRIPTS = io.txoutbox.internal.SchemaMigrator.SCRIPTS.size();


    @RegisterExtension
    static final PostgresExtension postgres = new PostgresExtension();

    private static OutboxSchema fresh(String name) {
        TestDatabase db = postgres.database();
        return OutboxSchema.builder().schema(db.schema() + "_" + name).build();
    }

    private static long count(String sql) {
        return postgres.database().queryLong(sql);
    }

    @Test
    void migrate_twice_is_a_no_op_the_second_time() {
        OutboxSchema schema = fresh("twice");
        schema.migrate(postgres.database().dataSource());
        schema.migrate(postgres.database().dataSource());
        assertThat(count("SELECT count(*) FROM " + schema.schema() + ".txoutbox_schema_history")).isEqualTo(SCRIPTS);
        assertThat(count("SELECT count(*) FROM pg_tables WHERE schemaname = '" + schema.schema()
                + "' AND tablename = 'outbox_event'")).isEqualTo(1);
    }

    @Test
    void racing_migrations_all_succeed_and_create_one_schema() throws Exception {
        OutboxSchema schema = fresh("race");
        int racers = 6;
        CyclicBarrier start = new CyclicBarrier(racers);
        ExecutorService pool = Executors.newFixedThreadPool(racers);
        try {
            List<Future<?>> results = new ArrayList<>();
            for (int i = 0; i < racers; i++) {
                results.add(pool.submit(() -> {
                    start.await();
                    schema.migrate(postgres.database().dataSource());
                    return null;
                }));
            }
            for (Future<?> f : results) {
                f.get(60, TimeUnit.SECONDS); // rethrows any racer's failure
            }
        } finally {
            pool.shutdownNow();
        }
        assertThat(count("SELECT count(*) FROM " + schema.schema() + ".txoutbox_schema_history")).isEqualTo(SCRIPTS);
        assertThat(count("SELECT count(*) FROM pg_namespace WHERE nspname = '" + schema.schema() + "'"))
                .isEqualTo(1);
    }

    @Test
    void a_plain_sql_writer_gets_the_same_shard_and_a_uuidv7_event_id() throws Exception {
        OutboxSchema schema = fresh("foreign");
        schema.migrate(postgres.database().dataSource());
        Outbox outbox = Outbox.builder().schema(schema).build();
        try (Connection c = postgres.database().connect()) {
            c.setAutoCommit(false);
            for (int i = 0; i < 200; i++) {
                outbox.publish(c, OutboxMessage.builder().topic("t").aggregate("A", "key-" + i).eventType("E")
                        .jsonPayload("{}").build());
            }
            // what a writer in another language does: no id, no event_id, no shard
            try (PreparedStatement ps = c.prepareStatement("INSERT INTO " + schema.qualifiedOutboxTable()
                    + " (topic, partition_key, aggregate_type, aggregate_id, event_type, payload)"
                    + " VALUES ('t', ?, 'A', ?, 'E', '{}')")) {
                for (int i = 0; i < 200; i++) {
                    ps.setString(1, "key-" + i);
                    ps.setString(2, "key-" + i);
                    ps.addBatch();
                }
                ps.executeBatch();
            }
            c.commit();
            try (Statement st = c.createStatement(); ResultSet rs = st.executeQuery(
                    "SELECT partition_key, count(DISTINCT shard), min(shard), "
                            + "bool_and(event_id::text LIKE '________-____-7___-____-____________') FROM "
                            + schema.qualifiedOutboxTable() + " GROUP BY partition_key")) {
                int keys = 0;
                while (rs.next()) {
                    keys++;
                    assertThat(rs.getInt(2)).as("one shard for key %s", rs.getString(1)).isEqualTo(1);
                    assertThat(rs.getInt(3)).isEqualTo(Shards.of(rs.getString(1), null, schema.shards()));
                    assertThat(rs.getBoolean(4)).as("UUIDv7 default").isTrue();
                }
                assertThat(keys).isEqualTo(200);
            }
            try (Statement st = c.createStatement(); ResultSet rs = st.executeQuery(
                    "SELECT count(DISTINCT shard) FROM " + schema.qualifiedOutboxTable())) {
                rs.next();
                assertThat(rs.getInt(1)).as("200 keys spread over the 32 shards").isGreaterThan(25);
            }
            c.commit();
        }
    }

    @Test
    void a_writer_role_needs_insert_on_the_outbox_only() throws Exception {
        OutboxSchema schema = fresh("roles");
        schema.migrate(postgres.database().dataSource());
        String role = "txoutbox_writer_" + Long.toString(System.nanoTime(), 36);
        TestDatabase db = postgres.database();
        db.execute("CREATE ROLE " + role + " NOLOGIN",
                "GRANT USAGE ON SCHEMA " + schema.schema() + " TO " + role,
                "GRANT INSERT ON " + schema.qualifiedOutboxTable() + " TO " + role);
        try (Connection c = db.connect()) {
            c.setAutoCommit(false);
            try (Statement st = c.createStatement()) {
                st.execute("SET LOCAL ROLE " + role);
            }
            Outbox.builder().schema(schema).build().publish(c, OutboxMessage.builder().topic("t")
                    .aggregate("A", "1").eventType("E").jsonPayload("{}").header("h", "v").build());
            try (Statement st = c.createStatement()) {
                assertThatThrownBy(() -> st.executeQuery("SELECT * FROM " + schema.qualifiedOutboxTable()))
                        .as("the role really is restricted").hasMessageContaining("permission denied");
            }
            c.rollback();
        } finally {
            db.execute("DROP OWNED BY " + role, "DROP ROLE " + role);
        }
    }

    @Test
    void a_changed_script_or_shard_count_is_refused_with_the_fix() {
        OutboxSchema schema = fresh("changed");
        schema.migrate(postgres.database().dataSource());
        OutboxSchema moreShards = OutboxSchema.builder().schema(schema.schema()).shards(64).build();
        assertThatThrownBy(() -> moreShards.migrate(postgres.database().dataSource()))
                .hasMessageContaining("was created with 32 shards").hasMessageContaining("configure shards=32");
        postgres.database().execute("UPDATE " + schema.schema() + ".txoutbox_schema_history SET checksum = 1");
        assertThatThrownBy(() -> schema.migrate(postgres.database().dataSource()))
                .hasMessageContaining("V1__outbox.sql differs").hasMessageContaining("add a new version");
    }

    @Test
    void two_outbox_tables_in_one_schema_are_versioned_apart() {
        OutboxSchema a = fresh("pair");
        OutboxSchema b = OutboxSchema.builder().schema(a.schema()).outboxTable("billing_outbox").shards(8).build();
        a.migrate(postgres.database().dataSource());
        b.migrate(postgres.database().dataSource());
        // every script per outbox table; V2 (the inbox, shared by the schema) ran twice without harm
        assertThat(count("SELECT count(*) FROM " + a.schema() + ".txoutbox_schema_history")).isEqualTo(2 * SCRIPTS);
        assertThat(count("SELECT count(*) FROM pg_tables WHERE schemaname = '" + a.schema()
                + "' AND tablename IN ('inbox_event', 'processed_event', 'applied_version')")).isEqualTo(3);
    }

    @Test
    void an_outbox_at_version_2_with_rows_is_upgraded_to_3_and_3_can_run_again() {
        OutboxSchema schema = fresh("v3");
        schema.migrate(postgres.database().dataSource());
        String t = schema.qualifiedOutboxTable();
        postgres.database().execute(
                "ALTER TABLE " + t + " DROP COLUMN failed_at, DROP COLUMN operator_action, DROP COLUMN operator_name,"
                        + " DROP COLUMN operator_at",
                "DELETE FROM " + schema.schema() + ".txoutbox_schema_history WHERE version = 3",
                "INSERT INTO " + t + " (topic, aggregate_type, aggregate_id, event_type, state)"
                        + " VALUES ('orders', 'Order', '1', 'E', 'DEAD')");
        schema.migrate(postgres.database().dataSource());
        postgres.database().execute("DELETE FROM " + schema.schema() + ".txoutbox_schema_history WHERE version = 3");
        schema.migrate(postgres.database().dataSource()); // every V3 statement is idempotent
        postgres.database().execute("UPDATE " + t + " SET state = 'DISCARDED', operator_action = 'DISCARDED',"
                + " operator_name = 'ops', operator_at = now()");
        assertThat(count("SELECT count(*) FROM " + t + " WHERE state = 'DISCARDED' AND operator_name = 'ops'"))
                .isEqualTo(1);
        assertThatThrownBy(() -> postgres.database().execute("UPDATE " + t + " SET state = 'GONE'"))
                .hasMessageContaining("_state");
    }

    @Test
    void an_outbox_at_version_1_is_upgraded_with_the_inbox_tables() {
        OutboxSchema schema = fresh("upgrade");
        schema.migrate(postgres.database().dataSource());
        postgres.database().execute("DROP TABLE " + schema.schema() + ".inbox_event, " + schema.schema()
                + ".processed_event, " + schema.schema() + ".applied_version",
                "DELETE FROM " + schema.schema() + ".txoutbox_schema_history WHERE version = 2");
        schema.migrate(postgres.database().dataSource());
        assertThat(count("SELECT count(*) FROM " + schema.schema() + ".txoutbox_schema_history WHERE version = 2"))
                .isEqualTo(1);
        assertThat(count("SELECT count(*) FROM pg_tables WHERE schemaname = '" + schema.schema()
                + "' AND tablename IN ('inbox_event', 'processed_event', 'applied_version')")).isEqualTo(3);
        schema.migrate(postgres.database().dataSource()); // and again: a no-op
        assertThat(count("SELECT count(*) FROM " + schema.schema() + ".txoutbox_schema_history")).isEqualTo(SCRIPTS);
    }

    @Test
    void the_inbox_script_uses_only_the_schema_placeholder() {
        String script = io.txoutbox.internal.SchemaMigrator.load("V2__inbox.sql");
        java.util.regex.Matcher m = java.util.regex.Pattern.compile("\\$\\{([a-z_]+)}").matcher(script);
        java.util.Set<String> found = new java.util.TreeSet<>();
        while (m.find()) {
            found.add(m.group(1));
        }
        assertThat(found).containsExactly("schema");
    }

    @Test
    void the_scripts_use_only_the_documented_placeholders() {
        String script = io.txoutbox.internal.SchemaMigrator.load("V1__outbox.sql");
        java.util.regex.Matcher m = java.util.regex.Pattern.compile("\\$\\{([a-z_]+)}").matcher(script);
        java.util.Set<String> found = new java.util.TreeSet<>();
        while (m.find()) {
            found.add(m.group(1));
        }
        assertThat(found).containsExactly("outbox_table", "schema", "shards");
        assertThat(new io.txoutbox.internal.SchemaMigrator(OutboxSchema.defaults()).render(script))
                .doesNotContain("${");
    }

    @Test
    void event_ids_made_in_sql_are_time_ordered() throws Exception {
        OutboxSchema schema = fresh("uuid");
        schema.migrate(postgres.database().dataSource());
        try (Connection c = postgres.database().connect(); Statement st = c.createStatement();
                ResultSet rs = st.executeQuery("SELECT " + schema.schema() + ".txoutbox_uuidv7()")) {
            rs.next();
            UUID id = (UUID) rs.getObject(1);
            assertThat(id.version()).isEqualTo(7);
            assertThat(id.variant()).isEqualTo(2);
            assertThat(io.txoutbox.internal.UuidV7.millisOf(id))
                    .isCloseTo(System.currentTimeMillis(), org.assertj.core.data.Offset.offset(60_000L));
        }
    }
}
