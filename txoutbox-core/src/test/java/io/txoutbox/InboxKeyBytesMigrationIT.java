package io.txoutbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.txoutbox.internal.SchemaMigrator;
import io.txoutbox.testing.postgres.PostgresExtension;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** Schema V6 on an inbox that already has rows: the key bytes are backfilled in batches after the script commits. */
@Tag("pg-version")
class InboxKeyBytesMigrationIT {

    @RegisterExtension
    static final PostgresExtension postgres = new PostgresExtension();
    private static final int ROWS = 3_000;
    /** Small batches, so a few hundred kB of heap take many. */
    private static final int PAGES_PER_BATCH = 4;

    private static long count(String sql) {
        return postgres.database().queryLong(sql);
    }

    /** A schema made by the scripts V1–V5 alone, as a release before V6 left it (no history: they are idempotent). */
    private static OutboxSchema atVersion5(String name) {
        OutboxSchema schema = OutboxSchema.builder().schema(postgres.database().schema() + "_" + name).build();
        SchemaMigrator migrator = new SchemaMigrator(schema);
        postgres.database().execute("CREATE SCHEMA \"" + schema.schema() + "\"");
        for (String script : SchemaMigrator.SCRIPTS) {
            if (!script.startsWith("V6__")) {
                postgres.database().execute(migrator.render(SchemaMigrator.load(script)));
            }
        }
        assertThat(count("SELECT count(*) FROM information_schema.columns WHERE table_schema = '" + schema.schema()
                + "' AND table_name = 'inbox_event' AND column_name = 'key_bytes'")).isZero();
        return schema;
    }

    /** Keys as a V5 receiver stored them (text): plain, non-ASCII, one that starts with \x, and none. */
    private static String keyOf(int i) {
        return switch (i % 4) {
            case 0 -> "order-" + (i % 50);
            case 1 -> "ключ-" + (i % 7) + "-€";
            case 2 -> "\\x41-" + (i % 3);
            default -> null;
        };
    }

    private static void storeRowsTheV5Way(OutboxSchema schema) throws Exception {
        try (Connection c = postgres.database().connect();
                PreparedStatement ps = c.prepareStatement("INSERT INTO " + schema.schema() + ".inbox_event"
                        + " (consumer, event_id, partition_key, event_type, payload) VALUES ('c', ?, ?, 'E', ?)")) {
            for (int i = 0; i < ROWS; i++) {
                ps.setObject(1, UUID.randomUUID());
                ps.setString(2, keyOf(i));
                ps.setBytes(3, ("{\"i\":" + i + "}").getBytes(StandardCharsets.UTF_8));
                ps.addBatch();
            }
            ps.executeBatch();
        }
    }

    private static void migrate(OutboxSchema schema) throws Exception {
        try (Connection c = postgres.database().connect()) {
            new SchemaMigrator(schema, PAGES_PER_BATCH).migrate(c);
        }
    }

    @Test
    void v6_backfills_the_key_bytes_of_existing_rows_in_batches_and_handlers_read_the_same_keys() throws Exception {
        OutboxSchema schema = atVersion5("backfill");
        String s = schema.schema();
        storeRowsTheV5Way(schema);
        long keyed = count("SELECT count(*) FROM " + s + ".inbox_event WHERE partition_key IS NOT NULL");
        long pages = count("SELECT pg_relation_size('" + s + ".inbox_event') / 8192");

        migrate(schema);

        assertThat(count("SELECT count(*) FROM " + s + ".txoutbox_schema_history WHERE version = 6")).isEqualTo(1);
        assertThat(count("SELECT count(*) FROM " + s + ".inbox_event WHERE partition_key IS NOT NULL"
                + " AND key_bytes IS DISTINCT FROM convert_to(partition_key, 'UTF8')")).isZero();
        assertThat(count("SELECT count(*) FROM " + s + ".inbox_event WHERE partition_key IS NULL"
                + " AND key_bytes IS NOT NULL")).isZero();
        assertThat(count("SELECT rows_done FROM " + s + ".txoutbox_backfill")).isEqualTo(keyed);
        long batches = count("SELECT batches FROM " + s + ".txoutbox_backfill");
        assertThat(batches).as("one transaction per %d pages of %d", PAGES_PER_BATCH, pages)
                .isEqualTo((pages + PAGES_PER_BATCH - 1) / PAGES_PER_BATCH).isGreaterThan(1);
        System.out.printf("V6 backfill: %d of %d rows with a key filled in %d batches of %d pages (%d pages)%n",
                keyed, ROWS, batches, PAGES_PER_BATCH, pages);

        migrate(schema); // done: recorded once, nothing runs again
        assertThat(count("SELECT count(*) FROM " + s + ".txoutbox_backfill")).isEqualTo(1);
        assertThat(count("SELECT batches FROM " + s + ".txoutbox_backfill")).isEqualTo(batches);

        Map<UUID, InboxEvent> seen = new ConcurrentHashMap<>();
        try (InboxWorker worker = InboxWorker.builder().dataSource(postgres.database().dataSource()).schema(schema)
                .consumer("c").pollInterval(Duration.ofMillis(50)).defaultHandler((c, e) -> seen.put(e.eventId(), e))
                .build().start()) {
            await().atMost(Duration.ofMinutes(2)).until(() -> seen.size() == ROWS);
        }
        Map<UUID, String> stored = new HashMap<>();
        try (Connection c = postgres.database().connect(); Statement st = c.createStatement();
                ResultSet rs = st.executeQuery("SELECT event_id, partition_key FROM " + s + ".inbox_event")) {
            while (rs.next()) {
                stored.put((UUID) rs.getObject(1), rs.getString(2));
            }
        }
        stored.forEach((id, key) -> {
            InboxEvent e = seen.get(id);
            assertThat(e.key()).isEqualTo(key);
            assertThat(e.keyBytes()).isEqualTo(key == null ? null : key.getBytes(StandardCharsets.UTF_8));
        });
    }

    @Test
    void the_backfill_leaves_pages_with_a_locked_row_for_the_next_migration_and_another_runner_to_itself()
            throws Exception {
        OutboxSchema schema = atVersion5("resume");
        String s = schema.schema();
        storeRowsTheV5Way(schema);
        long keyed = count("SELECT count(*) FROM " + s + ".inbox_event WHERE partition_key IS NOT NULL");
        try (Connection other = postgres.database().connect()) {
            other.setAutoCommit(false);
            // another runner holds the step's lock: this migration applies V6 and leaves the backfill to it
            try (PreparedStatement ps = other.prepareStatement("SELECT pg_advisory_lock(?, ?)")) {
                ps.setInt(1, 0x74786266);
                ps.setInt(2, (s + ".inbox_event.key_bytes").hashCode());
                ps.execute();
            }
            migrate(schema);
            assertThat(count("SELECT count(*) FROM " + s + ".txoutbox_schema_history WHERE version = 6")).isEqualTo(1);
            assertThat(count("SELECT count(*) FROM " + s + ".inbox_event WHERE key_bytes IS NOT NULL")).isZero();
            try (Statement st = other.createStatement()) {
                st.execute("SELECT pg_advisory_unlock_all()");
                // a long transaction holds one row (the last one): its batch waits 2 s per attempt, then is left
                st.execute("SELECT 1 FROM " + s + ".inbox_event WHERE id = (SELECT max(id) FROM " + s
                        + ".inbox_event WHERE partition_key IS NOT NULL) FOR UPDATE");
            }
            long t0 = System.nanoTime();
            migrate(schema);
            long ms = (System.nanoTime() - t0) / 1_000_000;
            assertThat(count("SELECT count(*) FROM " + s + ".txoutbox_backfill")).as("not done").isZero();
            long left = count("SELECT count(*) FROM " + s + ".inbox_event WHERE partition_key IS NOT NULL"
                    + " AND key_bytes IS NULL");
            assertThat(left).as("only the locked row's pages are left").isPositive()
                    .isLessThanOrEqualTo(keyed / 4);
            System.out.printf("V6 backfill beside a locked row: %d of %d keyed rows left for the next run, the"
                    + " migration took %d ms%n", left, keyed, ms);
            other.commit();
        }
        migrate(schema); // resumes: fills what was left and records the step
        assertThat(count("SELECT count(*) FROM " + s + ".inbox_event WHERE partition_key IS NOT NULL"
                + " AND key_bytes IS NULL")).isZero();
        assertThat(count("SELECT count(*) FROM " + s + ".txoutbox_backfill")).isEqualTo(1);
    }

    @Test
    void racing_migrations_over_existing_rows_all_succeed_and_the_backfill_runs_once() throws Exception {
        OutboxSchema schema = atVersion5("race");
        String s = schema.schema();
        storeRowsTheV5Way(schema);
        int racers = 4;
        java.util.concurrent.CyclicBarrier start = new java.util.concurrent.CyclicBarrier(racers);
        java.util.concurrent.ExecutorService pool = java.util.concurrent.Executors.newFixedThreadPool(racers);
        try {
            List<java.util.concurrent.Future<?>> runs = new java.util.ArrayList<>();
            for (int i = 0; i < racers; i++) {
                runs.add(pool.submit(() -> {
                    start.await();
                    migrate(schema);
                    return null;
                }));
            }
            for (java.util.concurrent.Future<?> run : runs) {
                run.get(2, java.util.concurrent.TimeUnit.MINUTES); // none failed
            }
        } finally {
            pool.shutdownNow();
        }
        assertThat(count("SELECT count(*) FROM " + s + ".txoutbox_schema_history WHERE version = 6")).isEqualTo(1);
        assertThat(count("SELECT count(*) FROM " + s + ".inbox_event WHERE partition_key IS NOT NULL"
                + " AND key_bytes IS DISTINCT FROM convert_to(partition_key, 'UTF8')")).isZero();
        assertThat(count("SELECT count(*) FROM " + s + ".txoutbox_backfill")).isEqualTo(1);
    }
}
