package io.txoutbox.bench;

import io.txoutbox.OutboxSchema;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.util.ArrayList;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The relay's database work alone, single-threaded: the claim and the mark statements the relay uses (same shape:
 * pending rows of all shards in id order, then {@code id = ANY(?)}), commit, no Kafka. The PostgreSQL ceiling of
 * one lane.
 */
final class DrainPgOnlyContender implements DrainBench.Contender {

    private static final Logger log = LoggerFactory.getLogger(DrainPgOnlyContender.class);

    private final DrainBench d;
    private final int batchSize;

    DrainPgOnlyContender(DrainBench d, int batchSize) {
        this.d = d;
        this.batchSize = batchSize;
    }

    @Override
    public String name() {
        return "PG path only batch=" + batchSize;
    }

    @Override
    public DrainBench.Result run(String id) throws Exception {
        OutboxSchema schema = Backlog.createSchema(d.env, "bench_" + id);
        String t = schema.qualifiedOutboxTable();
        String claim = "SELECT id, event_id, topic, partition_key, aggregate_type, aggregate_id, aggregate_version,"
                + " event_type, payload::text, payload_bytes, headers::text, created_at, attempts FROM " + t
                + " WHERE state = 'PENDING' AND shard = ANY(?)"
                + " AND (next_attempt_at IS NULL OR next_attempt_at <= now())"
                + " AND (partition_key IS NULL OR NOT (partition_key = ANY(?)))"
                + " ORDER BY id LIMIT ?";
        String mark = "UPDATE " + t + " SET state = 'PUBLISHED', published_at = now()"
                + " WHERE state = 'PENDING' AND id = ANY(?)";
        Integer[] shards = new Integer[schema.shards()];
        for (int i = 0; i < shards.length; i++) {
            shards[i] = i;
        }
        try (Connection c = d.env.dataSource().getConnection()) {
            Backlog.Written w = Backlog.write(d.env, schema, d.gen, "drain-" + id, d.events);
            try (var st = c.createStatement()) {
                st.execute("SET plan_cache_mode = force_custom_plan");
            }
            c.setAutoCommit(false);
            String lsn0 = d.env.walLsn();
            long claimNanos = 0;
            long markNanos = 0;
            long done = 0;
            long batches = 0;
            long t0 = System.nanoTime();
            try (PreparedStatement sel = c.prepareStatement(claim);
                 PreparedStatement upd = c.prepareStatement(mark)) {
                while (true) {
                    long a = System.nanoTime();
                    sel.setArray(1, c.createArrayOf("integer", shards));
                    sel.setArray(2, c.createArrayOf("text", new String[0]));
                    sel.setInt(3, batchSize);
                    sel.setFetchSize(batchSize);
                    List<Long> ids = new ArrayList<>(batchSize);
                    try (ResultSet rs = sel.executeQuery()) {
                        while (rs.next()) {
                            ids.add(rs.getLong(1));
                            rs.getObject(2);
                            rs.getString(9);
                            rs.getString(11);
                            rs.getTimestamp(12);
                        }
                    }
                    c.commit();
                    long b = System.nanoTime();
                    claimNanos += b - a;
                    if (ids.isEmpty()) {
                        break;
                    }
                    upd.setArray(1, c.createArrayOf("bigint", ids.toArray(new Long[0])));
                    upd.executeUpdate();
                    c.commit();
                    markNanos += System.nanoTime() - b;
                    done += ids.size();
                    batches++;
                }
            }
            long t1 = System.nanoTime();
            long wal = d.env.walBytesBetween(lsn0, d.env.walLsn());
            log.info("  claim {} ms/batch, mark+commit {} ms/batch over {} batches",
                    String.format("%.2f", claimNanos / 1e6 / batches), String.format("%.2f", markNanos / 1e6 / batches),
                    batches);
            return new DrainBench.Result(done, (t1 - t0) / 1e9, wal, w.walBytes(), w.seconds(), true,
                    Backlog.notPublished(d.env, schema),
                    new DrainBench.Anatomy(batches, (t1 - t0) / 1e6 / batches, claimNanos / 1e6 / batches, Double.NaN), null);
        } finally {
            Backlog.dropSchema(d.env, schema);
        }
    }
}
