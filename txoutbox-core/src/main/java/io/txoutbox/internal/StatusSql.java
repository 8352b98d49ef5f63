package io.txoutbox.internal;

import io.txoutbox.OutboxException;
import io.txoutbox.OutboxSchema;
import io.txoutbox.OutboxStatus;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import javax.sql.DataSource;

/**
 * The queries behind {@link OutboxStatus.Backlog}: two statements in one read-only transaction. Pending rows are
 * found through the pending partial index, parked and dead rows through the "failed" partial index (schema V3). The
 * backlog is still sampled every few seconds, never per batch: a large backlog is a large index range.
 */
public final class StatusSql {

    /** Bound on each status statement, set for the status transaction only. */
    static final long STATEMENT_TIMEOUT_MILLIS = 10_000;

    private final String pendingByTopic;
    private final String failedCounts;
    private final OutboxSchema schema;

    public StatusSql(OutboxSchema schema) {
        String t = schema.qualifiedOutboxTable();
        this.schema = schema;
        this.pendingByTopic = "SELECT topic, count(*),"
                + " greatest(0, (extract(epoch FROM now() - min(created_at)) * 1000000)::bigint)"
                + " FROM " + t + " WHERE state = 'PENDING' GROUP BY topic ORDER BY topic";
        this.failedCounts = "SELECT now(), count(*) FILTER (WHERE state = 'PARKED'),"
                + " count(*) FILTER (WHERE state = 'DEAD') FROM " + t + " WHERE state IN ('PARKED', 'DEAD')";
    }

    public OutboxStatus.Backlog backlog(DataSource dataSource) {
        try (Connection c = dataSource.getConnection()) {
            boolean autoCommit = c.getAutoCommit();
            c.setAutoCommit(false);
            try {
                OutboxStatus.Backlog backlog = backlog(c);
                c.commit();
                return backlog;
            } catch (SQLException | RuntimeException e) {
                c.rollback();
                throw e;
            } finally {
                c.setAutoCommit(autoCommit);
            }
        } catch (SQLException e) {
            throw new OutboxException("reading the backlog of " + schema + " failed: " + e.getMessage()
                    + " (SQLState " + e.getSQLState() + ")", e, SqlErrors.isRetriable(e));
        }
    }

    private OutboxStatus.Backlog backlog(Connection c) throws SQLException {
        // a status read must not hang its caller (a health endpoint, the sampler) on a table that is locked or huge
        try (PreparedStatement ps = c.prepareStatement("SELECT set_config('statement_timeout', ?, true)")) {
            ps.setString(1, Long.toString(STATEMENT_TIMEOUT_MILLIS));
            ps.execute();
        }
        List<OutboxStatus.TopicStatus> topics = new ArrayList<>();
        try (PreparedStatement ps = c.prepareStatement(pendingByTopic); ResultSet rs = ps.executeQuery()) {
            while (rs.next()) {
                topics.add(new OutboxStatus.TopicStatus(rs.getString(1), rs.getLong(2),
                        Duration.ofNanos(rs.getLong(3) * 1_000)));
            }
        }
        try (PreparedStatement ps = c.prepareStatement(failedCounts); ResultSet rs = ps.executeQuery()) {
            rs.next();
            return new OutboxStatus.Backlog(rs.getTimestamp(1).toInstant(), topics, rs.getLong(2), rs.getLong(3));
        }
    }
}
