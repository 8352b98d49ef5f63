package io.txoutbox.bench;

import io.txoutbox.Outbox;
import io.txoutbox.OutboxMessage;
import io.txoutbox.OutboxPartitioning;
import io.txoutbox.OutboxSchema;
import io.txoutbox.internal.partition.PartitionedOutbox;
import io.txoutbox.internal.progress.ProgressModels;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import javax.sql.DataSource;

/** Writes a backlog of committed events into a fresh outbox schema (not timed as part of the drain). */
final class Backlog {

    /** What writing the backlog cost. */
    record Written(long events, double seconds, long walBytes) {
    }

    private Backlog() {
    }

    static OutboxSchema createSchema(BenchEnv env, String name) {
        env.execute("DROP SCHEMA IF EXISTS \"" + name + "\" CASCADE");
        OutboxSchema schema = OutboxSchema.builder().schema(name).build();
        schema.migrate(env.dataSource());
        return schema;
    }

    static void dropSchema(BenchEnv env, OutboxSchema schema) {
        env.execute("DROP SCHEMA IF EXISTS \"" + schema.schema() + "\" CASCADE");
    }

    /**
     * Publishes {@code n} events in one transaction, {@value Outbox#MAX_ROWS_PER_STATEMENT} rows per INSERT, then
     * ANALYZE and CHECKPOINT so that the timed phase starts from the same state for every contender. Both run inside
     * the transaction, before its commit (ANALYZE counts the transaction's own rows): a relay that is already
     * running sees the rows at the commit, right before the caller starts its clock, and not during a checkpoint
     * after it.
     */
    static Written write(BenchEnv env, OutboxSchema schema, Events events, String topic, long n) throws SQLException {
        return write(env, schema, events, topic, n, () -> { });
    }

    /** {@link #write}, running {@code beforeCommit} last before the commit (a running relay starts at the commit). */
    static Written write(BenchEnv env, OutboxSchema schema, Events events, String topic, long n, Runnable beforeCommit)
            throws SQLException {
        Outbox outbox = Outbox.builder().schema(schema).build();
        env.execute("CHECKPOINT");
        String lsn0 = env.walLsn();
        long t0 = System.nanoTime();
        double seconds;
        long wal;
        try (Connection c = env.dataSource().getConnection()) {
            c.setClientInfo("ApplicationName", CpuRules.WRITER_APPLICATION);
            c.setAutoCommit(false);
            List<OutboxMessage> chunk = new ArrayList<>(Outbox.MAX_ROWS_PER_STATEMENT);
            for (long i = 0; i < n; i++) {
                chunk.add(events.message(topic, i));
                if (chunk.size() == Outbox.MAX_ROWS_PER_STATEMENT || i == n - 1) {
                    outbox.publish(c, chunk);
                    chunk.clear();
                }
            }
            seconds = (System.nanoTime() - t0) / 1e9;
            wal = env.walBytesBetween(lsn0, env.walLsn());
            try (Statement st = c.createStatement()) {
                st.execute("ANALYZE " + schema.qualifiedOutboxTable());
                st.execute("CHECKPOINT");
            }
            beforeCommit.run();
            c.commit();
        }
        return new Written(n, seconds, wal);
    }

    /**
     * A daily-partitioned outbox whose partitions reach back 11 days and 9 ahead, as if the table had been converted
     * 12 days ago: room for back-dated rows (see {@link #uuidV7At}).
     */
    static OutboxSchema backdatedPartitionedSchema(DataSource ds, String name) throws SQLException {
        OutboxSchema.builder().schema(name).build().migrate(ds);
        OutboxSchema schema = OutboxSchema.builder().schema(name)
                .partitioned(OutboxPartitioning.daily().ahead(20)).build();
        PartitionedOutbox table = new PartitionedOutbox(schema);
        try (Connection c = ds.getConnection()) {
            Instant past = Instant.now().minus(Duration.ofDays(12));
            table.convert(c, past);
            c.setAutoCommit(false);
            table.createAhead(c, past.plus(Duration.ofDays(1)), Duration.ofSeconds(5), new ArrayList<>());
            c.commit();
        }
        return schema;
    }

    /** SQL for a UUIDv7 of the Unix milliseconds that {@code millisSql} computes, made by the database. */
    static String uuidV7At(String millisSql) {
        return "encode(set_bit(set_bit(overlay(uuid_send(gen_random_uuid()) placing substring(int8send(("
                + millisSql + ")::bigint) FROM 3) FROM 1 FOR 6), 52, 1), 53, 1), 'hex')::uuid";
    }

    /** Rows not published by the table's progress model ({@link ProgressModels#of}: the one in use for it). */
    static long notPublished(BenchEnv env, OutboxSchema schema) {
        return env.queryLong("SELECT count(*) FROM " + schema.qualifiedOutboxTable() + " o WHERE NOT ("
                + ProgressModels.of(schema).published("o") + ")");
    }

    /**
     * Waits until no row is pending by the table's progress model, at most {@code timeout}; returns how many still
     * are. Under the cursor model a delivered row stops being pending only once its lane's cursor passes it, a
     * settlement (100–300 ms) or an idle poll after the delivery. Cheap (the pending predicate's indexes), unlike
     * {@link #notPublished}, which reads the whole table.
     */
    static long awaitNonePending(BenchEnv env, OutboxSchema schema, Duration timeout) throws InterruptedException {
        String sql = "SELECT count(*) FROM " + schema.qualifiedOutboxTable() + " o WHERE "
                + ProgressModels.of(schema).pending("o");
        long deadline = System.nanoTime() + timeout.toNanos();
        long left = env.queryLong(sql);
        while (left > 0 && System.nanoTime() < deadline) {
            Thread.sleep(20);
            left = env.queryLong(sql);
        }
        return left;
    }
}
