package io.txoutbox.internal.relay;

import io.txoutbox.OutboxAdmin;
import io.txoutbox.OutboxException;
import io.txoutbox.OutboxSchema;
import io.txoutbox.internal.SqlErrors;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** The SQL behind {@link OutboxAdmin}. */
public final class DefaultOutboxAdmin implements OutboxAdmin {

    private static final Logger log = LoggerFactory.getLogger(DefaultOutboxAdmin.class);

    private final DataSource dataSource;
    private final String table;
    private final RelaySql relaySql;

    public DefaultOutboxAdmin(DataSource dataSource, OutboxSchema schema) {
        this.dataSource = dataSource;
        this.table = schema.qualifiedOutboxTable();
        this.relaySql = new RelaySql(schema);
    }

    @Override
    public List<LaneOwner> laneOwners() {
        String sql = "SELECT (l.objid::bigint & 65535)::int, a.application_name, a.backend_start, a.state_change"
                + " FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid WHERE l.locktype = 'advisory'"
                + " AND l.granted AND l.objsubid = 1 AND l.classid::bigint = "
                + Integer.toUnsignedLong(relaySql.tableHash) + " AND (l.objid::bigint >> 16) = "
                + RelaySql.LOCK_KIND_LANE + " ORDER BY 1";
        return inTransaction("listing lane owners", c -> {
            List<LaneOwner> out = new ArrayList<>();
            try (PreparedStatement ps = c.prepareStatement(sql); ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    // application_name: "txoutbox-relay <lane id> <instance id>"
                    String app = rs.getString(2);
                    String instance = app == null ? "" : app.substring(app.lastIndexOf(' ') + 1);
                    out.add(new LaneOwner(rs.getInt(1), instance, rs.getTimestamp(3).toInstant(),
                            rs.getTimestamp(4) == null ? null : rs.getTimestamp(4).toInstant()));
                }
            }
            return out;
        });
    }

    @Override
    public java.util.Map<Integer, Long> pendingByShard() {
        return inTransaction("counting pending events per shard", c -> {
            java.util.Map<Integer, Long> out = new java.util.TreeMap<>();
            try (PreparedStatement ps = c.prepareStatement("SELECT shard, count(*) FROM " + table
                    + " WHERE state = 'PENDING' GROUP BY shard"); ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    out.put(rs.getInt(1), rs.getLong(2));
                }
            }
            return out;
        });
    }

    @FunctionalInterface
    private interface Work<T> {
        T run(Connection c) throws SQLException;
    }

    private <T> T inTransaction(String what, Work<T> work) {
        try (Connection c = dataSource.getConnection()) {
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
            throw new OutboxException(what + " failed: " + e.getMessage() + " (SQLState " + e.getSQLState() + ")",
                    e, SqlErrors.isRetriable(e));
        }
    }

    @Override
    public List<ParkedKey> parkedKeys(int limit) {
        String sql = "SELECT p.partition_key, p.event_id, p.id, p.topic, p.event_type, p.attempts, p.last_error,"
                + " p.created_at, (SELECT count(*) FROM " + table + " w WHERE w.state = 'PENDING'"
                + " AND w.partition_key = p.partition_key AND w.id > p.id) FROM " + table + " p"
                + " WHERE p.state = 'PARKED' ORDER BY p.id LIMIT ?";
        return inTransaction("listing parked keys", c -> {
            List<ParkedKey> out = new ArrayList<>();
            try (PreparedStatement ps = c.prepareStatement(sql)) {
                ps.setInt(1, limit);
                try (ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) {
                        out.add(new ParkedKey(rs.getString(1), (UUID) rs.getObject(2), rs.getLong(3),
                                rs.getString(4), rs.getString(5), rs.getInt(6), rs.getString(7),
                                rs.getTimestamp(8).toInstant(), rs.getLong(9)));
                    }
                }
            }
            return out;
        });
    }

    @Override
    public List<DeadEvent> deadEvents(int limit) {
        String sql = "SELECT event_id, id, partition_key, topic, event_type, attempts, last_error, created_at FROM "
                + table + " WHERE state = 'DEAD' ORDER BY id LIMIT ?";
        return inTransaction("listing dead events", c -> {
            List<DeadEvent> out = new ArrayList<>();
            try (PreparedStatement ps = c.prepareStatement(sql)) {
                ps.setInt(1, limit);
                try (ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) {
                        out.add(new DeadEvent((UUID) rs.getObject(1), rs.getLong(2), rs.getString(3),
                                rs.getString(4), rs.getString(5), rs.getInt(6), rs.getString(7),
                                rs.getTimestamp(8).toInstant()));
                    }
                }
            }
            return out;
        });
    }

    @Override
    public boolean retryNow(UUID eventId) {
        String sql = "UPDATE " + table + " SET state = 'PENDING', attempts = 0, next_attempt_at = NULL"
                + " WHERE event_id = ? AND state IN ('PARKED', 'DEAD')";
        boolean changed = inTransaction("retrying event " + eventId, c -> update(c, sql, eventId) == 1);
        log.info("txoutbox-admin: retry now of event {}: {}", eventId, changed ? "done" : "not parked or dead");
        return changed;
    }

    @Override
    public boolean skip(UUID eventId) {
        String sql = "UPDATE " + table + " SET state = 'DEAD', next_attempt_at = NULL,"
                + " last_error = coalesce(last_error, '') || ' [skipped by an operator]'"
                + " WHERE event_id = ? AND state = 'PARKED'";
        boolean changed = inTransaction("skipping event " + eventId, c -> update(c, sql, eventId) == 1);
        log.info("txoutbox-admin: skip of event {}: {}", eventId, changed ? "done" : "not parked");
        return changed;
    }

    @Override
    public long pendingCount() {
        return inTransaction("counting pending events", c -> {
            try (PreparedStatement ps = c.prepareStatement("SELECT count(*) FROM " + table
                    + " WHERE state = 'PENDING'"); ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getLong(1);
            }
        });
    }

    private static int update(Connection c, String sql, UUID eventId) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(sql)) {
            ps.setObject(1, eventId);
            return ps.executeUpdate();
        }
    }
}
