package io.txoutbox.internal.inbox;

import io.txoutbox.InboxAdmin;
import io.txoutbox.InboxWorkerConfig;
import io.txoutbox.InvalidConfigurationException;
import io.txoutbox.OutboxException;
import io.txoutbox.OutboxGrants;
import io.txoutbox.OutboxSchema;
import io.txoutbox.internal.Privileges;
import io.txoutbox.internal.ReadCommitted;
import io.txoutbox.internal.SqlErrors;
import io.txoutbox.internal.StatusSql;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.UUID;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** The SQL behind {@link InboxAdmin}. */
public final class DefaultInboxAdmin implements InboxAdmin {

    private static final Logger log = LoggerFactory.getLogger(DefaultInboxAdmin.class);

    private final DataSource dataSource;
    private final InboxSql sql;

    public DefaultInboxAdmin(DataSource dataSource, OutboxSchema schema) {
        this.dataSource = dataSource;
        this.sql = new InboxSql(schema.schema());
    }

    @FunctionalInterface
    private interface Work<T> {
        T run(Connection c) throws SQLException;
    }

    private <T> T inTransaction(String what, Work<T> work) {
        try (Connection c = ReadCommitted.open(dataSource)) {
            c.setAutoCommit(false);
            try {
                T result = work.run(c);
                c.commit();
                return result;
            } catch (SQLException | RuntimeException e) {
                c.rollback();
                throw e;
            }
        } catch (SQLException e) {
            throw new OutboxException(what + " failed: " + e.getMessage() + " (SQLState " + e.getSQLState() + ")"
                    + Privileges.hint(e, what.startsWith("purging") ? OutboxGrants.Component.INBOX_RETENTION
                            : OutboxGrants.Component.ADMIN), e, SqlErrors.isRetriable(e));
        }
    }

    @Override
    public List<ParkedKey> parkedKeys(String consumer, int limit) {
        InboxWorkerConfig.requireConsumer("inboxAdmin.consumer", consumer);
        String q = "SELECT p.partition_key, p.event_id, p.event_type, p.attempts, p.last_error, p.received_at,"
                + " (SELECT count(*) FROM " + sql.inbox + " w WHERE w.consumer = p.consumer AND w.state = 'PENDING'"
                + " AND w.partition_key = p.partition_key AND w.id > p.id) FROM " + sql.inbox + " p"
                + " WHERE p.consumer = ? AND p.state = 'PARKED' ORDER BY p.id LIMIT ?";
        return inTransaction("listing parked inbox keys of " + consumer, c -> {
            List<ParkedKey> out = new ArrayList<>();
            try (PreparedStatement ps = c.prepareStatement(q)) {
                ps.setString(1, consumer);
                ps.setInt(2, limit);
                try (ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) {
                        out.add(new ParkedKey(consumer, rs.getString(1), (UUID) rs.getObject(2), rs.getString(3),
                                rs.getInt(4), rs.getString(5), rs.getTimestamp(6).toInstant(), rs.getLong(7)));
                    }
                }
            }
            return out;
        });
    }

    @Override
    public List<DeadEvent> deadEvents(String consumer, int limit) {
        InboxWorkerConfig.requireConsumer("inboxAdmin.consumer", consumer);
        String q = "SELECT event_id, partition_key, event_type, attempts, last_error, received_at FROM " + sql.inbox
                + " WHERE consumer = ? AND state = 'DEAD' ORDER BY id LIMIT ?";
        return inTransaction("listing dead inbox events of " + consumer, c -> {
            List<DeadEvent> out = new ArrayList<>();
            try (PreparedStatement ps = c.prepareStatement(q)) {
                ps.setString(1, consumer);
                ps.setInt(2, limit);
                try (ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) {
                        out.add(new DeadEvent(consumer, (UUID) rs.getObject(1), rs.getString(2), rs.getString(3),
                                rs.getInt(4), rs.getString(5), rs.getTimestamp(6).toInstant()));
                    }
                }
            }
            return out;
        });
    }

    @Override
    public boolean retryNow(String consumer, UUID eventId) {
        String q = "UPDATE " + sql.inbox + " SET state = 'PENDING', attempts = 0, next_attempt_at = NULL"
                + " WHERE consumer = ? AND event_id = ? AND state IN ('PARKED', 'DEAD')";
        boolean changed = inTransaction("retrying inbox event " + eventId, c -> update(c, q, consumer, eventId) == 1);
        log.info("txoutbox-inbox-admin: retry now of event {} for consumer {}: {}", eventId, consumer,
                changed ? "done" : "not parked or dead");
        return changed;
    }

    @Override
    public boolean skip(String consumer, UUID eventId) {
        String q = "UPDATE " + sql.inbox + " SET state = 'DEAD', next_attempt_at = NULL,"
                + " last_error = coalesce(last_error, '') || ' [skipped by an operator]'"
                + " WHERE consumer = ? AND event_id = ? AND state = 'PARKED'";
        boolean changed = inTransaction("skipping inbox event " + eventId, c -> update(c, q, consumer, eventId) == 1);
        log.info("txoutbox-inbox-admin: skip of event {} for consumer {}: {}", eventId, consumer,
                changed ? "done" : "not parked");
        return changed;
    }

    @Override
    public long pendingCount(String consumer) {
        return inTransaction("counting pending inbox events", c -> {
            try (PreparedStatement ps = c.prepareStatement("SELECT count(*) FROM " + sql.inbox
                    + " WHERE consumer = ? AND state = 'PENDING'")) {
                ps.setString(1, consumer);
                try (ResultSet rs = ps.executeQuery()) {
                    rs.next();
                    return rs.getLong(1);
                }
            }
        });
    }

    @Override
    public List<ConsumerBacklog> backlog() {
        // Each predicate repeats its partial index's (V2 pending, V5 failed) so the planner uses it.
        String pending = "SELECT consumer, count(*),"
                + " greatest(0, (extract(epoch FROM now() - min(received_at)) * 1000000)::bigint)"
                + " FROM " + sql.inbox + " WHERE state = 'PENDING' GROUP BY consumer";
        String failed = "SELECT consumer, count(*) FILTER (WHERE state = 'PARKED'),"
                + " count(*) FILTER (WHERE state = 'DEAD') FROM " + sql.inbox
                + " WHERE state IN ('PARKED', 'DEAD') GROUP BY consumer";
        return inTransaction("reading the inbox backlog of schema " + sql.schemaName, c -> {
            StatusSql.boundStatusReads(c);
            Map<String, ConsumerBacklog> out = new TreeMap<>();
            try (PreparedStatement ps = c.prepareStatement(pending); ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    out.put(rs.getString(1), new ConsumerBacklog(rs.getString(1), rs.getLong(2),
                            Duration.ofNanos(rs.getLong(3) * 1_000), 0, 0));
                }
            }
            try (PreparedStatement ps = c.prepareStatement(failed); ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    ConsumerBacklog p = out.get(rs.getString(1));
                    out.put(rs.getString(1), new ConsumerBacklog(rs.getString(1), p == null ? 0 : p.pending(),
                            p == null ? Duration.ZERO : p.oldestPendingAge(), rs.getLong(2), rs.getLong(3)));
                }
            }
            return List.copyOf(out.values());
        });
    }

    @Override
    public Purged purge(Duration processedEventRetention, Duration inboxRetention, int batchSize) {
        requireAge("inboxRetention.processedEventRetention", processedEventRetention);
        requireAge("inboxRetention.inboxRetention", inboxRetention);
        if (batchSize < 1 || batchSize > 100_000) {
            throw new InvalidConfigurationException("inboxRetention.batchSize must be between 1 and 100000, was "
                    + batchSize);
        }
        String deleteProcessed = "DELETE FROM " + sql.processed + " WHERE ctid = ANY(ARRAY(SELECT ctid FROM "
                + sql.processed + " WHERE processed_at < now() - ? * interval '1 ms' LIMIT ?))";
        String deleteInbox = "DELETE FROM " + sql.inbox + " WHERE ctid = ANY(ARRAY(SELECT ctid FROM " + sql.inbox
                + " WHERE state = 'PROCESSED' AND processed_at < now() - ? * interval '1 ms' LIMIT ?))";
        long processed = deleteInBatches("purging processed_event", deleteProcessed,
                processedEventRetention.toMillis(), batchSize);
        long inbox = deleteInBatches("purging processed inbox rows", deleteInbox, inboxRetention.toMillis(),
                batchSize);
        log.info("txoutbox-inbox-admin: purged {} processed_event rows older than {} and {} processed inbox rows "
                + "older than {}", processed, processedEventRetention, inbox, inboxRetention);
        return new Purged(processed, inbox);
    }

    private long deleteInBatches(String what, String statement, long ageMs, int batchSize) {
        long total = 0;
        while (true) {
            int n = inTransaction(what, c -> {
                try (PreparedStatement ps = c.prepareStatement(statement)) {
                    ps.setLong(1, ageMs);
                    ps.setInt(2, batchSize);
                    return ps.executeUpdate();
                }
            });
            total += n;
            if (n < batchSize) {
                return total;
            }
        }
    }

    private static void requireAge(String property, Duration d) {
        if (d == null || d.isNegative()) {
            throw new InvalidConfigurationException(property + " must be >= 0, was " + d);
        }
    }

    private static int update(Connection c, String q, String consumer, UUID eventId) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(q)) {
            ps.setString(1, consumer);
            ps.setObject(2, eventId);
            return ps.executeUpdate();
        }
    }
}
