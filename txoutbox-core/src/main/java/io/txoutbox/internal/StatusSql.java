package io.txoutbox.internal;

import io.txoutbox.internal.pg.ReadCommitted;
import io.txoutbox.OutboxException;
import io.txoutbox.OutboxGrants;
import io.txoutbox.OutboxSchema;
import io.txoutbox.OutboxStatus;
import io.txoutbox.internal.partition.PartitionedOutbox;
import io.txoutbox.internal.pg.Jdbc;
import io.txoutbox.internal.pg.PgErrors;
import io.txoutbox.internal.pg.StatusStatements;
import io.txoutbox.internal.progress.ProgressModels;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import javax.sql.DataSource;

/**
 * The reads behind {@link OutboxStatus.Backlog} (two statements in one read-only transaction) and
 * {@link OutboxStatus.ShardStatus} (one); the statements are {@link StatusStatements}. Pending rows are found through
 * the pending partial index, parked and dead rows through the "failed" partial index (schema V3). Both are still
 * sampled every few seconds, never per batch: a large backlog is a large index range.
 */
public final class StatusSql {

    /** Bound on each status statement, set for the status transaction only. */
    static final long STATEMENT_TIMEOUT_MILLIS = 10_000;

    private final StatusStatements statements;
    private final OutboxSchema schema;

    public StatusSql(OutboxSchema schema) {
        this.schema = schema;
        this.statements = new StatusStatements(schema, ProgressModels.of(schema)::pending);
    }

    public OutboxStatus.Backlog backlog(DataSource dataSource) {
        return read(dataSource, "the backlog", this::backlog);
    }

    public List<OutboxStatus.ShardStatus> shards(DataSource dataSource) {
        return read(dataSource, "the pending events per shard", this::shards);
    }

    /** The relay lanes owned now, by lane. */
    public List<OutboxStatus.LaneOwner> lanes(DataSource dataSource) {
        return read(dataSource, "the lane owners", this::lanes);
    }

    /** The pending events. */
    public long pendingCount(DataSource dataSource) {
        return read(dataSource, "the pending count", c -> Jdbc.queryLong(c, statements.pendingCount()).orElseThrow());
    }

    private List<OutboxStatus.LaneOwner> lanes(Connection c) throws SQLException {
        List<OutboxStatus.LaneOwner> out = new ArrayList<>();
        try (PreparedStatement ps = c.prepareStatement(statements.laneOwners())) {
            Jdbc.bind(ps, statements.laneOwnerBinds());
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    // application_name: "txoutbox-relay <lane id> <instance id>"
                    String app = rs.getString(2);
                    String instance = app == null ? "" : app.substring(app.lastIndexOf(' ') + 1);
                    // a role that cannot see the relay's sessions (not a member of the relay's role, nor of
                    // pg_read_all_stats) sees their application_name but not their times
                    out.add(new OutboxStatus.LaneOwner(rs.getInt(1), instance, instant(rs.getTimestamp(3)),
                            instant(rs.getTimestamp(4))));
                }
            }
        }
        return out;
    }

    private static Instant instant(java.sql.Timestamp ts) {
        return ts == null ? null : ts.toInstant();
    }

    /** The partitions of a time-partitioned outbox (estimated rows; the default partition's counted). */
    public List<OutboxStatus.PartitionStatus> partitions(DataSource dataSource) {
        return read(dataSource, "the partitions", this::partitions);
    }

    private List<OutboxStatus.PartitionStatus> partitions(Connection c) throws SQLException {
        PartitionedOutbox table = new PartitionedOutbox(schema);
        Map<String, Long> estimates = new HashMap<>();
        try (PreparedStatement ps = c.prepareStatement(StatusStatements.partitionEstimates())) {
            ps.setString(1, schema.qualifiedOutboxTable());
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    estimates.put(rs.getString(1), rs.getLong(2));
                }
            }
        }
        List<OutboxStatus.PartitionStatus> out = new ArrayList<>();
        for (PartitionedOutbox.Partition p : table.partitions(c)) {
            long rows = p.isDefault() ? table.defaultRows(c) : estimates.getOrDefault(p.name(), 0L);
            out.add(new OutboxStatus.PartitionStatus(p.name(), instant(p.from()), instant(p.to()), rows,
                    p.isDefault()));
        }
        return out;
    }

    private static Instant instant(UUID bound) {
        return bound == null ? null : Instant.ofEpochMilli(bound.getMostSignificantBits() >>> 16);
    }

    private <T> T read(DataSource dataSource, String what, ReadCommitted.Work<T> read) {
        try {
            return ReadCommitted.transaction(dataSource, c -> {
                boundStatusReads(c);
                return read.run(c);
            });
        } catch (SQLException e) {
            throw new OutboxException("reading " + what + " of " + schema + " failed: " + e.getMessage()
                    + " (SQLState " + e.getSQLState() + ")" + Privileges.hint(e, OutboxGrants.Component.ADMIN), e,
                    PgErrors.isRetriable(e));
        }
    }

    /**
     * Bounds every following statement of the current transaction (autocommit off) by
     * {@value #STATEMENT_TIMEOUT_MILLIS} ms: a status read must not hang its caller (a health endpoint, a gauge
     * sampler) on a table that is locked or huge.
     */
    public static void boundStatusReads(Connection c) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(StatusStatements.statementTimeoutForTransaction())) {
            ps.setString(1, Long.toString(STATEMENT_TIMEOUT_MILLIS));
            ps.execute();
        }
    }

    private OutboxStatus.Backlog backlog(Connection c) throws SQLException {
        List<OutboxStatus.TopicStatus> topics = new ArrayList<>();
        try (PreparedStatement ps = c.prepareStatement(statements.pendingByTopic()); ResultSet rs = ps.executeQuery()) {
            while (rs.next()) {
                topics.add(new OutboxStatus.TopicStatus(rs.getString(1), rs.getLong(2),
                        Duration.ofNanos(rs.getLong(3) * 1_000)));
            }
        }
        try (PreparedStatement ps = c.prepareStatement(statements.failedCounts()); ResultSet rs = ps.executeQuery()) {
            rs.next();
            return new OutboxStatus.Backlog(rs.getTimestamp(1).toInstant(), topics, rs.getLong(2), rs.getLong(3));
        }
    }

    private List<OutboxStatus.ShardStatus> shards(Connection c) throws SQLException {
        List<OutboxStatus.ShardStatus> shards = new ArrayList<>();
        try (PreparedStatement ps = c.prepareStatement(statements.pendingByShard()); ResultSet rs = ps.executeQuery()) {
            while (rs.next()) {
                shards.add(new OutboxStatus.ShardStatus(rs.getInt(1), rs.getLong(2),
                        Duration.ofNanos(rs.getLong(3) * 1_000)));
            }
        }
        return shards;
    }
}
