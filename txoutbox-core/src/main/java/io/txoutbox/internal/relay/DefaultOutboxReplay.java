package io.txoutbox.internal.relay;

import io.txoutbox.OutboxException;
import io.txoutbox.OutboxReplay;
import io.txoutbox.internal.ReadCommitted;
import io.txoutbox.spi.OutboxRecord;
import io.txoutbox.spi.SendResult;
import io.txoutbox.spi.Transport;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.zip.CRC32;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@link OutboxReplay}: walks the outbox by id windows (the BRIN index on {@code id} finds each window's pages, so
 * no page of the range is ever read twice and nothing is sorted but one window), sends each page as one batch through
 * the transport on the lane {@code replay-<name>}, and checkpoints the last id after the page was acknowledged.
 */
public final class DefaultOutboxReplay implements OutboxReplay {

    private static final Logger log = LoggerFactory.getLogger(DefaultOutboxReplay.class);
    /** Widest id window tried when windows come back empty (sparse ids after retention, or a narrow filter). */
    private static final long MAX_WINDOW = 1L << 22;

    private final OutboxReplay.Builder b;
    private final String table;
    private final String checkpoints;
    private final String filter;
    private final String pageSql;
    private volatile boolean stopping;

    public DefaultOutboxReplay(OutboxReplay.Builder builder) {
        this.b = builder;
        this.table = builder.schema().qualifiedOutboxTable();
        this.checkpoints = "\"" + builder.schema().schema() + "\".\"" + builder.schema().outboxTable() + "_replay\"";
        this.filter = describeFilter(builder);
        this.pageSql = "SELECT " + RelaySql.RECORD_COLUMNS + " FROM " + table
                + " WHERE id > ? AND id <= ? AND state = 'PUBLISHED'"
                + " AND (?::text IS NULL OR topic = ?::text)"
                + " AND (?::text IS NULL OR aggregate_type = ?::text)"
                + " AND (?::text IS NULL OR aggregate_id = ?::text)"
                + " AND (?::text IS NULL OR event_type = ?::text)"
                + " AND (?::timestamptz IS NULL OR created_at >= ?::timestamptz)"
                + " AND (?::timestamptz IS NULL OR created_at < ?::timestamptz)"
                + " ORDER BY id LIMIT ?";
    }

    private static String describeFilter(OutboxReplay.Builder b) {
        return "topic=" + b.topic() + " aggregateType=" + b.aggregateType() + " aggregateId=" + b.aggregateId()
                + " eventType=" + b.eventType() + " created=[" + b.createdFrom() + "," + b.createdTo() + ") ids=["
                + b.idFrom() + "," + b.idTo() + "] toTopic=" + b.toTopic();
    }

    @Override
    public Result run() {
        long started = System.nanoTime();
        try (Connection c = ReadCommitted.open(b.dataSource())) {
            c.setAutoCommit(true);
            long lockKey = lockKey();
            if (!tryLock(c, lockKey)) {
                throw new OutboxException("replay '" + b.name() + "' is already running elsewhere (its advisory lock "
                        + "is held); wait for it, or stop it first", null, false);
            }
            try {
                Checkpoint cp = checkpoint(c);
                if (cp.finished) {
                    log.info("txoutbox-replay {}: already done ({} replayed); reset() to run it again", b.name(),
                            cp.replayed);
                    return cp.result(true, Duration.ZERO);
                }
                log.info("txoutbox-replay {}: {} from id {} up to {} ({})", b.name(),
                        cp.lastId == Math.max(0, b.idFrom() - 1) ? "starting" : "resuming", cp.lastId, cp.upTo,
                        filter);
                return loop(c, cp, started);
            } finally {
                unlock(c, lockKey);
            }
        } catch (SQLException e) {
            throw new OutboxException("replay '" + b.name() + "' failed: " + e.getMessage() + " (SQLState "
                    + e.getSQLState() + "); run it again to resume from its checkpoint", e, true);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new OutboxException("replay '" + b.name() + "' interrupted; run it again to resume", e, true);
        } finally {
            b.transport().close();
        }
    }

    private Result loop(Connection c, Checkpoint cp, long started) throws SQLException, InterruptedException {
        long lo = cp.lastId;
        long window = b.batchSize();
        long sentThisRun = 0;
        long paceStart = System.nanoTime();
        while (!stopping && !Thread.currentThread().isInterrupted() && lo < cp.upTo) {
            long hi = Math.min(cp.upTo, lo + window);
            List<OutboxRecord> page = page(c, lo, hi);
            if (page.isEmpty()) {
                lo = hi;
                window = Math.min(MAX_WINDOW, window * 2);
                continue;
            }
            long skipped = send(page);
            lo = page.size() == b.batchSize() ? page.get(page.size() - 1).id() : hi;
            window = b.batchSize();
            cp.replayed += page.size() - skipped;
            cp.skipped += skipped;
            cp.lastId = lo;
            save(c, cp, false);
            sentThisRun += page.size();
            pace(paceStart, sentThisRun);
        }
        boolean done = lo >= cp.upTo;
        cp.lastId = lo;
        save(c, cp, done);
        Duration elapsed = Duration.ofNanos(System.nanoTime() - started);
        log.info("txoutbox-replay {}: {} ({} replayed, {} skipped in all; {} this run in {} ms)", b.name(),
                done ? "done" : "stopped", cp.replayed, cp.skipped, sentThisRun, elapsed.toMillis());
        return cp.result(done, elapsed);
    }

    private List<OutboxRecord> page(Connection c, long lo, long hi) throws SQLException {
        List<OutboxRecord> out = new ArrayList<>();
        try (PreparedStatement ps = c.prepareStatement(pageSql)) {
            int i = 1;
            ps.setLong(i++, lo);
            ps.setLong(i++, hi);
            for (String v : new String[] {b.topic(), b.aggregateType(), b.aggregateId(), b.eventType()}) {
                ps.setString(i++, v);
                ps.setString(i++, v);
            }
            Timestamp from = b.createdFrom() == null ? null : Timestamp.from(b.createdFrom());
            Timestamp to = b.createdTo() == null ? null : Timestamp.from(b.createdTo());
            ps.setTimestamp(i++, from);
            ps.setTimestamp(i++, from);
            ps.setTimestamp(i++, to);
            ps.setTimestamp(i++, to);
            ps.setInt(i, b.batchSize());
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    OutboxRecord r = RelaySql.record(rs);
                    Map<String, String> headers = new HashMap<>(r.headers());
                    headers.put(REPLAY_HEADER, b.name());
                    out.add(r.redirect(b.toTopic() != null ? b.toTopic() : r.topic(), headers));
                }
            }
        }
        return out;
    }

    /**
     * Sends the page until every record is delivered or refused for good; what is not delivered goes again, in
     * order, after a growing pause (the transport's contract keeps a failed record's later records of its key back).
     * Returns how many were refused for good.
     */
    private long send(List<OutboxRecord> page) throws InterruptedException {
        List<OutboxRecord> left = page;
        long skipped = 0;
        long backoffMs = 50;
        while (!left.isEmpty()) {
            List<SendResult> results;
            try {
                results = b.transport().send("replay-" + b.name(), left).toCompletableFuture()
                        .get(b.sendTimeout().toMillis(), TimeUnit.MILLISECONDS);
            } catch (java.util.concurrent.ExecutionException | TimeoutException e) {
                results = null;
                log.warn("txoutbox-replay {}: page of {} not acknowledged ({}); sending it again", b.name(),
                        left.size(), e.toString());
            }
            List<OutboxRecord> again = new ArrayList<>();
            for (int i = 0; i < left.size(); i++) {
                SendResult r = results == null || results.size() != left.size() ? null : results.get(i);
                if (r != null && r.isDelivered()) {
                    continue;
                }
                if (r instanceof SendResult.Failed f && f.kind() == SendResult.Kind.PERMANENT) {
                    skipped++;
                    log.error("txoutbox-replay {}: event {} (outbox id {}) refused for good, skipped: {}", b.name(),
                            left.get(i).eventId(), left.get(i).id(), f.cause().toString());
                    continue;
                }
                again.add(left.get(i));
            }
            left = again;
            if (!left.isEmpty()) {
                if (stopping) {
                    throw new InterruptedException("stopped with a page not yet acknowledged");
                }
                Thread.sleep(backoffMs); // a backoff between tries, not a wait for a condition
                backoffMs = Math.min(b.retryBackoffMax().toMillis(), backoffMs * 2);
            }
        }
        return skipped;
    }

    private void pace(long startNanos, long sent) throws InterruptedException {
        if (b.maxRate() <= 0) {
            return;
        }
        long due = startNanos + (long) (sent / b.maxRate() * 1e9);
        long wait = due - System.nanoTime();
        if (wait > 0) {
            TimeUnit.NANOSECONDS.sleep(wait); // the rate limit
        }
    }

    // ---- checkpoint ------------------------------------------------------------------------------------------

    private final class Checkpoint {
        long lastId;
        long upTo;
        long replayed;
        long skipped;
        boolean finished;

        Result result(boolean done, Duration elapsed) {
            return new Result(b.name(), replayed, skipped, lastId, upTo, done, elapsed);
        }
    }

    private Checkpoint checkpoint(Connection c) throws SQLException {
        Checkpoint cp = read(c);
        if (cp == null) {
            long upTo = Math.min(b.idTo(), lastIdSoFar(c));
            try (PreparedStatement ps = c.prepareStatement("INSERT INTO " + checkpoints
                    + " (name, filter, last_id, up_to_id) VALUES (?, ?, ?, ?) ON CONFLICT (name) DO NOTHING")) {
                ps.setString(1, b.name());
                ps.setString(2, filter);
                ps.setLong(3, Math.max(0, b.idFrom() - 1));
                ps.setLong(4, upTo);
                ps.executeUpdate();
            }
            cp = read(c);
        }
        return cp;
    }

    private Checkpoint read(Connection c) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("SELECT filter, last_id, up_to_id, replayed, skipped,"
                + " finished_at IS NOT NULL FROM " + checkpoints + " WHERE name = ?")) {
            ps.setString(1, b.name());
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next()) {
                    return null;
                }
                if (!rs.getString(1).equals(filter)) {
                    throw new OutboxException("replay '" + b.name() + "' was started with another filter ("
                            + rs.getString(1) + "); use a new name, or reset() this one to start over", null, false);
                }
                Checkpoint cp = new Checkpoint();
                cp.lastId = rs.getLong(2);
                cp.upTo = rs.getLong(3);
                cp.replayed = rs.getLong(4);
                cp.skipped = rs.getLong(5);
                cp.finished = rs.getBoolean(6);
                return cp;
            }
        }
    }

    private void save(Connection c, Checkpoint cp, boolean done) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("UPDATE " + checkpoints + " SET last_id = ?, replayed = ?,"
                + " skipped = ?, updated_at = now(), finished_at = CASE WHEN ? THEN now() END WHERE name = ?")) {
            ps.setLong(1, cp.lastId);
            ps.setLong(2, cp.replayed);
            ps.setLong(3, cp.skipped);
            ps.setBoolean(4, done);
            ps.setString(5, b.name());
            ps.executeUpdate();
        }
    }

    /** The last id handed out so far: the range ends there, events written after the start are not replayed. */
    private long lastIdSoFar(Connection c) throws SQLException {
        // the identity sequence, not max(id): the table has no b-tree on id, and a scan of it all is what a
        // replay of a big table must never do
        try (PreparedStatement ps = c.prepareStatement("SELECT coalesce(pg_sequence_last_value("
                + "pg_get_serial_sequence(?, 'id')::regclass), 0)")) {
            ps.setString(1, table);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getLong(1);
            }
        }
    }

    @Override
    public void stop() {
        stopping = true;
    }

    @Override
    public Result progress() {
        try (Connection c = ReadCommitted.open(b.dataSource())) {
            Checkpoint cp = read(c);
            return cp == null ? null : cp.result(cp.finished, Duration.ZERO);
        } catch (SQLException e) {
            throw new OutboxException("reading the progress of replay '" + b.name() + "' failed: " + e.getMessage(),
                    e, true);
        }
    }

    @Override
    public void reset() {
        try (Connection c = ReadCommitted.open(b.dataSource());
                PreparedStatement ps = c.prepareStatement("DELETE FROM " + checkpoints + " WHERE name = ?")) {
            ps.setString(1, b.name());
            ps.executeUpdate();
        } catch (SQLException e) {
            throw new OutboxException("resetting replay '" + b.name() + "' failed: " + e.getMessage(), e, true);
        }
    }

    private long lockKey() {
        CRC32 crc = new CRC32();
        crc.update((checkpoints + "/" + b.name()).getBytes(StandardCharsets.UTF_8));
        return 0x7265706CL << 32 | crc.getValue(); // "repl"
    }

    private static boolean tryLock(Connection c, long key) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("SELECT pg_try_advisory_lock(?)")) {
            ps.setLong(1, key);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getBoolean(1);
            }
        }
    }

    private static void unlock(Connection c, long key) {
        try (PreparedStatement ps = c.prepareStatement("SELECT pg_advisory_unlock(?)")) {
            ps.setLong(1, key);
            ps.execute();
        } catch (SQLException e) {
            log.debug("txoutbox-replay: unlock failed (the session ends anyway): {}", e.toString());
        }
    }
}
