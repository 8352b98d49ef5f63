package io.txoutbox.bench;

import io.txoutbox.OutboxSchema;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.Callable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * What recording progress costs the database, by model (issue 14): a backlog of pending rows is written (not
 * measured), then one session claims the next batch in id order and records it as published, one transaction per
 * batch, until none is left. Models: {@code row-update} (today's mark of every row), {@code shard-cursor} (a
 * {@code progress} row per shard, the shards of the batch advanced by one UPDATE) and {@code lane-cursor} (one
 * {@code progress} row per lane, one single-row UPDATE per batch). PostgreSQL only: no broker is used.
 */
@Command(name = "progress", mixinStandardHelpOptions = true,
        description = "WAL, rows/s and dead tuples per event of recording progress: row-update, shard-cursor,"
                + " lane-cursor; PostgreSQL only.")
final class ProgressBench implements Callable<Integer> {

    private static final Logger log = LoggerFactory.getLogger(ProgressBench.class);

    /** The columns the relay reads of each claimed row. */
    private static final String COLUMNS = "t.id, t.shard, t.event_id, t.topic, t.partition_key, t.aggregate_type,"
            + " t.aggregate_id, t.aggregate_version, t.event_type, t.payload::text, t.payload_bytes, t.headers::text,"
            + " t.created_at, t.attempts";

    /** Rows the progress UPDATEs reported, to check the table's counters against. */
    private static final java.util.concurrent.atomic.AtomicLong UPDATED = new java.util.concurrent.atomic.AtomicLong();

    static final List<String> MODELS = List.of("row-update", "shard-cursor", "lane-cursor");

    @Mixin
    CommonOptions common;

    @Spec
    CommandSpec spec;

    @Option(names = "--events", defaultValue = "100000", description = "pending rows per run (default ${DEFAULT-VALUE})")
    int events;

    @Option(names = "--batches", split = ",", defaultValue = "7,55,500,2000",
            description = "batch sizes (default ${DEFAULT-VALUE})")
    int[] batches;

    @Option(names = "--shards", defaultValue = "" + OutboxSchema.DEFAULT_SHARDS,
            description = "shards of the outbox table (default ${DEFAULT-VALUE}, the schema's default)")
    int shards;

    @Option(names = "--models", split = ",", defaultValue = "row-update,shard-cursor,lane-cursor",
            description = "models to run (default ${DEFAULT-VALUE})")
    List<String> models;

    /** One measured loop. */
    record Result(String model, int batch, long events, long batchCount, double seconds, long walBytes,
                  long insertWalBytes, long outboxDead, long progressUpdates, long progressHot) {
    }

    @Override
    public Integer call() throws Exception {
        for (String m : models) {
            if (!MODELS.contains(m)) {
                throw new IllegalArgumentException("--models: unknown model '" + m + "'; use some of " + MODELS);
            }
        }
        for (int b : batches) {
            if (b < 1) {
                throw new IllegalArgumentException("--batches: a batch size must be at least 1, was " + b);
            }
        }
        if (shards < 1) {
            throw new IllegalArgumentException("--shards must be at least 1, was " + shards);
        }
        if (events < 1) {
            throw new IllegalArgumentException("--events must be at least 1, was " + events);
        }
        Events gen = new Events(common.keys, common.payloadBytes);
        try (BenchEnv env = new BenchEnv(common)) {
            List<Result> results = new ArrayList<>();
            int n = 0;
            for (int b : batches) {
                for (String m : models) {
                    Result r = run(env, gen, m, b, "bench_progress_" + (n++));
                    log.info("{} batch {}: {} events in {} s, WAL {} B/event, outbox dead {}/event", m, b, r.events,
                            Stats.fmt(r.seconds), Stats.fmt((double) r.walBytes / r.events),
                            Stats.fmt((double) r.outboxDead / r.events));
                    results.add(r);
                }
            }
            System.out.println(report(env, results));
        }
        return 0;
    }

    private Result run(BenchEnv env, Events gen, String model, int batch, String schemaName) throws Exception {
        env.execute("DROP SCHEMA IF EXISTS \"" + schemaName + "\" CASCADE");
        OutboxSchema schema = OutboxSchema.builder().schema(schemaName).shards(shards).build();
        schema.migrate(env.dataSource());
        String t = schema.qualifiedOutboxTable();
        String progress = "\"" + schemaName + "\".progress";
        try {
            // autovacuum off on both tables: the loop's WAL is the model's statements and commits only
            env.execute("ALTER TABLE " + t + " SET (autovacuum_enabled = false)");
            if (model.equals("shard-cursor")) {
                env.execute("CREATE TABLE " + progress + " (shard smallint PRIMARY KEY, through_id bigint NOT NULL,"
                        + " at timestamptz NOT NULL) WITH (fillfactor = 50, autovacuum_enabled = false)",
                        "INSERT INTO " + progress + " SELECT s, 0, now() FROM generate_series(0, "
                                + (schema.shards() - 1) + ") s",
                        "ANALYZE " + progress);
            } else if (model.equals("lane-cursor")) {
                env.execute("CREATE TABLE " + progress + " (lane int PRIMARY KEY, through_id bigint NOT NULL,"
                        + " at timestamptz NOT NULL) WITH (fillfactor = 50, autovacuum_enabled = false)",
                        "INSERT INTO " + progress + " VALUES (0, 0, now())", "ANALYZE " + progress);
            }
            String insert0 = insertLsn(env);
            Backlog.write(env, schema, gen, "progress", events);
            long insertWal = env.walBytesBetween(insert0, insertLsn(env));
            Thread.sleep(1_100); // the writer's table counters reach the shared statistics
            long[] before = counters(env, schemaName, schema.outboxTable(), model.equals("row-update"));
            long done = 0;
            long batchCount = 0;
            String lsn0;
            String lsn1;
            long t0;
            long t1;
            try (Connection c = env.dataSource().getConnection()) {
                try (Statement st = c.createStatement()) {
                    st.execute("SET plan_cache_mode = force_custom_plan");
                }
                c.setAutoCommit(false);
                Loop loop = loop(c, model, t, progress, batch);
                lsn0 = insertLsn(env);
                t0 = System.nanoTime();
                while (true) {
                    int claimed = loop.batch();
                    c.commit();
                    if (claimed == 0) {
                        break;
                    }
                    done += claimed;
                    batchCount++;
                }
                t1 = System.nanoTime();
                lsn1 = insertLsn(env);
                loop.close();
                try (Statement st = c.createStatement()) {
                    st.execute("SELECT pg_stat_force_next_flush()");
                }
                c.commit();
            }
            Thread.sleep(1_100);
            long[] after = counters(env, schemaName, schema.outboxTable(), model.equals("row-update"));
            log.info("{} batch {}: progress UPDATEs reported {} rows, n_tup_upd {}", model, batch, UPDATED.getAndSet(0),
                    after[1] - before[1]);
            if (done != events) {
                throw new IllegalStateException(model + " batch " + batch + ": recorded " + done + " of " + events
                        + " events");
            }
            return new Result(model, batch, done, batchCount, (t1 - t0) / 1e9, env.walBytesBetween(lsn0, lsn1),
                    insertWal, after[0] - before[0], after[1] - before[1], after[2] - before[2]);
        } finally {
            Backlog.dropSchema(env, schema);
        }
    }

    /** One batch of a model: claim, record; the caller commits. */
    private interface Loop extends AutoCloseable {
        /** @return the rows claimed and recorded (0: none left) */
        int batch() throws SQLException;

        @Override
        void close() throws SQLException;
    }

    private static Loop loop(Connection c, String model, String t, String progress, int batch) throws SQLException {
        return switch (model) {
            case "row-update" -> {
                PreparedStatement claim = c.prepareStatement("SELECT " + COLUMNS + " FROM " + t
                        + " t WHERE t.state = 'PENDING' ORDER BY t.id LIMIT ?");
                PreparedStatement mark = c.prepareStatement("UPDATE " + t + " SET state = 'PUBLISHED',"
                        + " published_at = now() WHERE state = 'PENDING' AND id = ANY(?)");
                yield new Loop() {
                    @Override
                    public int batch() throws SQLException {
                        List<Long> ids = new ArrayList<>(batch);
                        claim(claim, batch, (id, shard) -> ids.add(id));
                        if (!ids.isEmpty()) {
                            mark.setArray(1, c.createArrayOf("bigint", ids.toArray(new Long[0])));
                            mark.executeUpdate();
                        }
                        return ids.size();
                    }

                    @Override
                    public void close() throws SQLException {
                        claim.close();
                        mark.close();
                    }
                };
            }
            case "shard-cursor" -> {
                // one lane owns all shards: rows after the lowest cursor, each kept only past its own shard's cursor
                PreparedStatement claim = c.prepareStatement("SELECT " + COLUMNS + " FROM " + t + " t JOIN "
                        + progress + " p ON p.shard = t.shard WHERE t.state = 'PENDING'"
                        + " AND t.id > (SELECT min(through_id) FROM " + progress + ") AND t.id > p.through_id"
                        + " ORDER BY t.id LIMIT ?");
                PreparedStatement record = c.prepareStatement("UPDATE " + progress + " p SET through_id = v.max_id,"
                        + " at = now() FROM unnest(?::smallint[], ?::bigint[]) AS v(shard, max_id)"
                        + " WHERE p.shard = v.shard");
                yield new Loop() {
                    @Override
                    public int batch() throws SQLException {
                        Map<Integer, Long> max = new TreeMap<>();
                        int n = claim(claim, batch, (id, shard) -> max.merge(shard, id, Math::max));
                        if (n > 0) {
                            record.setArray(1, c.createArrayOf("smallint", max.keySet().toArray(new Integer[0])));
                            record.setArray(2, c.createArrayOf("bigint", max.values().toArray(new Long[0])));
                            UPDATED.addAndGet(record.executeUpdate());
                        }
                        return n;
                    }

                    @Override
                    public void close() throws SQLException {
                        claim.close();
                        record.close();
                    }
                };
            }
            case "lane-cursor" -> {
                PreparedStatement claim = c.prepareStatement("SELECT " + COLUMNS + " FROM " + t
                        + " t WHERE t.state = 'PENDING' AND t.id > (SELECT through_id FROM " + progress
                        + " WHERE lane = 0) ORDER BY t.id LIMIT ?");
                PreparedStatement record = c.prepareStatement("UPDATE " + progress + " SET through_id = ?,"
                        + " at = now() WHERE lane = 0");
                yield new Loop() {
                    @Override
                    public int batch() throws SQLException {
                        long[] last = {0};
                        int n = claim(claim, batch, (id, shard) -> last[0] = Math.max(last[0], id));
                        if (n > 0) {
                            record.setLong(1, last[0]);
                            UPDATED.addAndGet(record.executeUpdate());
                        }
                        return n;
                    }

                    @Override
                    public void close() throws SQLException {
                        claim.close();
                        record.close();
                    }
                };
            }
            default -> throw new IllegalArgumentException("unknown model '" + model + "'; use one of " + MODELS);
        };
    }

    private interface Row {
        void accept(long id, int shard);
    }

    /** Runs the claim, reading the columns the relay reads; returns the number of rows. */
    private static int claim(PreparedStatement claim, int batch, Row row) throws SQLException {
        claim.setInt(1, batch);
        claim.setFetchSize(batch);
        int n = 0;
        try (ResultSet rs = claim.executeQuery()) {
            while (rs.next()) {
                row.accept(rs.getLong(1), rs.getInt(2));
                rs.getObject(3);
                rs.getString(5);
                rs.getString(10);
                rs.getBytes(11);
                rs.getString(12);
                rs.getTimestamp(13);
                n++;
            }
        }
        return n;
    }

    /**
     * Where the next WAL record goes: unlike {@code pg_current_wal_lsn()} (written WAL), it counts what is still in
     * the WAL buffers, as in a write phase before its commit.
     */
    private static String insertLsn(BenchEnv env) {
        return env.queryString("SELECT pg_current_wal_insert_lsn()::text");
    }

    /** Outbox {@code n_tup_upd + n_tup_del}, progress {@code n_tup_upd}, progress {@code n_tup_hot_upd}. */
    private static long[] counters(BenchEnv env, String schema, String outbox, boolean noProgress)
            throws SQLException {
        try (Connection c = env.dataSource().getConnection(); Statement st = c.createStatement()) {
            st.execute("SELECT pg_stat_clear_snapshot()");
            long[] r = new long[3];
            try (ResultSet rs = st.executeQuery("SELECT relname, n_tup_upd, n_tup_del, n_tup_hot_upd"
                    + " FROM pg_stat_user_tables WHERE schemaname = '" + schema + "'")) {
                while (rs.next()) {
                    if (rs.getString(1).equals(outbox)) {
                        r[0] = rs.getLong(2) + rs.getLong(3);
                    } else if (!noProgress && rs.getString(1).equals("progress")) {
                        r[1] = rs.getLong(2);
                        r[2] = rs.getLong(4);
                    }
                }
            }
            return r;
        }
    }

    private String report(BenchEnv env, List<Result> results) {
        Stats.Table table = new Stats.Table("model", "batch", "batches", "events/s", "WAL B/event",
                "% of INSERT", "dead tuples/event", "progress updates/event", "HOT");
        long insertWal = 0;
        long insertEvents = 0;
        for (Result r : results) {
            insertWal += r.insertWalBytes;
            insertEvents += r.events;
        }
        double insertPerEvent = (double) insertWal / insertEvents;
        for (Result r : results) {
            double wal = (double) r.walBytes / r.events;
            table.row(r.model, r.batch, r.batchCount, Stats.fmt(r.events / r.seconds), Stats.fmt(wal),
                    Stats.fmt(100 * wal / insertPerEvent) + "%", Stats.fmt((double) r.outboxDead / r.events),
                    r.model.equals("row-update") ? "-" : Stats.fmt((double) r.progressUpdates / r.events),
                    r.progressUpdates == 0 ? "-" : Stats.fmt(100.0 * r.progressHot / r.progressUpdates) + "%");
        }
        List<String> out = new ArrayList<>();
        out.add("\n## progress\n");
        env.describe().forEach(l -> out.add("- " + l));
        out.add("- " + events + " pending rows per run, written first (not measured) into a fresh outbox table of "
                + "the real schema (" + shards + " shards, " + common.keys + " keys round-robin, " + common.payloadBytes
                + "-byte payloads); then one session: claim the next batch in id order (the relay's columns read),"
                + " record it, commit — each batch its own transaction (claim + record + commit)");
        out.add("- row-update: claim WHERE state = 'PENDING' ORDER BY id LIMIT n, mark UPDATE … SET state ="
                + " 'PUBLISHED', published_at = now() WHERE state = 'PENDING' AND id = ANY(?)");
        out.add("- shard-cursor: progress(shard smallint primary key, through_id, at), fillfactor 50, one lane owning"
                + " all shards; claim rows with id > min(through_id) and id > their own shard's through_id"
                + " (join on shard), id order; record one UPDATE progress … FROM unnest(shards[], max ids[]) for"
                + " the shards in the batch");
        out.add("- lane-cursor: progress(lane int primary key, through_id, at), fillfactor 50; claim id > through_id;"
                + " record one single-row UPDATE");
        out.add("- the cursor claims keep state = 'PENDING' in the WHERE to walk the existing partial index on id"
                + " (the rows stay PENDING); autovacuum off on both tables during the run (row-update's later"
                + " vacuum WAL is not counted)");
        out.add("- WAL: pg_current_wal_insert_lsn before/after the loop (commit records included); INSERT: the same"
                + " over the write phase (" + Stats.fmt(insertPerEvent) + " B/event over all runs, 1,000 rows per"
                + " INSERT, one transaction, with its ANALYZE and CHECKPOINT records); dead tuples: n_tup_upd + n_tup_del of the outbox table; progress updates:"
                + " n_tup_upd of the progress table, HOT: n_tup_hot_upd of them");
        out.add("- command: bench " + String.join(" ", spec.commandLine().getParseResult().originalArgs()));
        out.add("");
        out.add(table.toString());
        return String.join("\n", out);
    }
}
