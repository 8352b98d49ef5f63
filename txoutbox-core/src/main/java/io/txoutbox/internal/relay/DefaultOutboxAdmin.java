package io.txoutbox.internal.relay;

import io.txoutbox.OutboxAdmin;
import io.txoutbox.OutboxException;
import io.txoutbox.OutboxGrants;
import io.txoutbox.OutboxSchema;
import io.txoutbox.internal.Privileges;
import io.txoutbox.internal.ReadCommitted;
import io.txoutbox.internal.SqlErrors;
import io.txoutbox.internal.pg.AdvisoryLocks;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.UUID;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** The SQL behind {@link OutboxAdmin}. */
public final class DefaultOutboxAdmin implements OutboxAdmin {

    private static final Logger log = LoggerFactory.getLogger(DefaultOutboxAdmin.class);

    private final DataSource dataSource;
    private final String table;
    private final OutboxSchema schema;

    private static final int BULK_PAGE = 1_000;
    private static final String[] FAILED = {"DEAD", "PARKED"};
    /** The audit columns; the first bind parameter of every change is the operator (null: the database user). */
    private static final String AUDIT = "operator_name = coalesce(?, current_user), operator_at = now()";
    /**
     * Due now with a {@code next_attempt_at}, not NULL: the row is then in the index of rows that back off, which the
     * relay's claim starts from, so it goes out before the later events of its key even when the claim floor has gone
     * past it (a parked key does not hold the floor back).
     */
    private final String requeueSet = "state = 'PENDING', attempts = 0, next_attempt_at = now(),"
            + " operator_action = 'REQUEUED', " + AUDIT;
    private final String discardSet = "state = 'DISCARDED', next_attempt_at = NULL, operator_action = 'DISCARDED', "
            + AUDIT;
    private final String skipSet = "state = 'DEAD', next_attempt_at = NULL,"
            + " last_error = coalesce(last_error, '') || ' [skipped by an operator]', operator_action = 'SKIPPED', "
            + AUDIT;

    /**
     * Run before a skip or discard of parked rows (event ids in the array): the next pending event of each one's key
     * becomes due with a {@code next_attempt_at}, so the relay's claim starts at it even when the claim floor went
     * past the key's held events while it was parked (see {@code RelayStatements.claim}); without it those events
     * would go out only when a claim without floor finds them, after later events of the key.
     */
    private final String releaseNext;

    public DefaultOutboxAdmin(DataSource dataSource, OutboxSchema schema) {
        this.dataSource = dataSource;
        this.table = schema.qualifiedOutboxTable();
        this.schema = schema;
        this.releaseNext = "UPDATE " + table + " n SET next_attempt_at = now() FROM (SELECT (SELECT x.event_id FROM "
                + table + " x WHERE x.state = 'PENDING' AND x.shard = p.shard AND x.partition_key = p.partition_key"
                + " AND x.id > p.id ORDER BY x.id LIMIT 1) AS event_id FROM " + table + " p"
                + " WHERE p.event_id = ANY(?) AND p.state = 'PARKED' AND p.partition_key IS NOT NULL) m"
                + " WHERE n.event_id = m.event_id AND n.state = 'PENDING' AND n.next_attempt_at IS NULL";
    }

    @Override
    public List<LaneOwner> laneOwners() {
        String sql = "SELECT (l.objid::bigint & 65535)::int, a.application_name, a.backend_start, a.state_change"
                + " FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid WHERE l.locktype = 'advisory'"
                + " AND l.granted AND l.objsubid = 1 AND l.classid::bigint = "
                + Integer.toUnsignedLong(AdvisoryLocks.relayTableHash(schema)) + " AND (l.objid::bigint >> 16) = "
                + AdvisoryLocks.KIND_LANE + " ORDER BY 1";
        return inTransaction("listing lane owners", c -> {
            List<LaneOwner> out = new ArrayList<>();
            try (PreparedStatement ps = c.prepareStatement(sql); ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    // application_name: "txoutbox-relay <lane id> <instance id>"
                    String app = rs.getString(2);
                    String instance = app == null ? "" : app.substring(app.lastIndexOf(' ') + 1);
                    // a role that cannot see the relay's sessions (not a member of the relay's role, nor of
                    // pg_read_all_stats) sees their application_name but not their times
                    out.add(new LaneOwner(rs.getInt(1), instance,
                            rs.getTimestamp(3) == null ? null : rs.getTimestamp(3).toInstant(),
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
            String hint = "42703".equals(e.getSQLState()) ? "; the outbox table is older than this version of"
                    + " txoutbox: run OutboxSchema.migrate (or apply V3__operations.sql with your migration tool)" : "";
            throw new OutboxException(what + " failed: " + e.getMessage() + " (SQLState " + e.getSQLState() + ")"
                    + hint + Privileges.hint(e, OutboxGrants.Component.ADMIN), e, SqlErrors.isRetriable(e));
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
    public boolean requeue(UUID eventId, String operator) {
        return changeOne("requeue", requeueSet, FAILED, eventId, operator);
    }

    @Override
    public long requeue(EventFilter filter, String operator) {
        return changeMatching("requeue", requeueSet, filter, operator);
    }

    @Override
    public boolean discard(UUID eventId, String operator) {
        return changeOne("discard", discardSet, FAILED, eventId, operator);
    }

    @Override
    public long discard(EventFilter filter, String operator) {
        return changeMatching("discard", discardSet, filter, operator);
    }

    @Override
    public boolean skip(UUID eventId, String operator) {
        return changeOne("skip", skipSet, new String[] {"PARKED"}, eventId, operator);
    }

    private boolean changeOne(String action, String set, String[] fromStates, UUID eventId, String operator) {
        Objects.requireNonNull(eventId, "eventId");
        checkOperator(operator);
        String sql = "UPDATE " + table + " SET " + set + " WHERE event_id = ? AND state = ANY(?)";
        boolean changed = inTransaction(action + " of event " + eventId, c -> {
            if (set != requeueSet) {
                releaseNext(c, new UUID[] {eventId});
            }
            try (PreparedStatement ps = c.prepareStatement(sql)) {
                ps.setString(1, operator);
                ps.setObject(2, eventId);
                ps.setArray(3, c.createArrayOf("text", fromStates));
                return ps.executeUpdate() == 1;
            }
        });
        log.info("txoutbox-admin: {} of event {} by {}: {}", action, eventId, operator == null ? "(db user)" : operator,
                changed ? "done" : "not " + String.join(" or ", fromStates).toLowerCase(java.util.Locale.ROOT));
        return changed;
    }

    private void releaseNext(Connection c, UUID[] eventIds) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(releaseNext)) {
            ps.setArray(1, c.createArrayOf("uuid", eventIds));
            ps.executeUpdate();
        }
    }

    /**
     * Pages of {@value #BULK_PAGE} matching rows in id order, each changed in its own short transaction; a row that
     * left the expected state in between (a relay sent it, another operator changed it) is not touched.
     */
    private long changeMatching(String action, String set, EventFilter filter, String operator) {
        Objects.requireNonNull(filter, "filter");
        checkOperator(operator);
        String[] states = filter.states().stream().map(Enum::name).filter(s -> !s.equals("DISCARDED"))
                .sorted().toArray(String[]::new);
        if (states.length == 0) {
            throw new IllegalArgumentException(action + " applies to PARKED or DEAD events; the filter names only "
                    + filter.states());
        }
        EventFilter effective = new EventFilter(
                java.util.Arrays.stream(states).map(FailedState::valueOf).collect(java.util.stream.Collectors.toSet()),
                filter.topic(), filter.eventType(), filter.key(), filter.createdFrom(), filter.createdBefore(),
                filter.failedFrom(), filter.failedBefore());
        String update = "UPDATE " + table + " SET " + set + " WHERE event_id = ANY(?) AND state = ANY(?)";
        long total = 0;
        long after = 0;
        while (true) {
            long from = after;
            long[] lastAndCount = inTransaction(action + " of matching events", c -> {
                List<UUID> ids = new ArrayList<>();
                long last = from;
                try (PreparedStatement ps = selectMatching(c, "event_id, id", effective, from, BULK_PAGE);
                        ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) {
                        ids.add((UUID) rs.getObject(1));
                        last = rs.getLong(2);
                    }
                }
                if (ids.isEmpty()) {
                    return new long[] {last, 0, 0};
                }
                if (set != requeueSet) {
                    releaseNext(c, ids.toArray(new UUID[0]));
                }
                try (PreparedStatement ps = c.prepareStatement(update)) {
                    ps.setString(1, operator);
                    ps.setArray(2, c.createArrayOf("uuid", ids.toArray()));
                    ps.setArray(3, c.createArrayOf("text", states));
                    return new long[] {last, ids.size(), ps.executeUpdate()};
                }
            });
            total += lastAndCount[2];
            after = lastAndCount[0];
            if (lastAndCount[1] < BULK_PAGE) {
                break;
            }
        }
        log.info("txoutbox-admin: {} of {} events matching {} by {}", action, total, filter,
                operator == null ? "(db user)" : operator);
        return total;
    }

    @Override
    public List<FailedEvent> failedEvents(EventFilter filter, long afterId, int limit) {
        Objects.requireNonNull(filter, "filter");
        if (limit < 1 || limit > 10_000) {
            throw new IllegalArgumentException("limit must be between 1 and 10000, was " + limit);
        }
        return inTransaction("listing failed events", c -> {
            List<FailedEvent> out = new ArrayList<>();
            try (PreparedStatement ps = selectMatching(c, "id, event_id, state, partition_key, topic, event_type,"
                    + " attempts, last_error, created_at, failed_at, operator_action, operator_name, operator_at",
                    filter, afterId, limit); ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    out.add(new FailedEvent(rs.getLong(1), (UUID) rs.getObject(2),
                            FailedState.valueOf(rs.getString(3)), rs.getString(4), rs.getString(5), rs.getString(6),
                            rs.getInt(7), rs.getString(8), instant(rs, 9), instant(rs, 10), rs.getString(11),
                            rs.getString(12), instant(rs, 13)));
                }
            }
            return out;
        });
    }

    /** The filter's criteria as fixed SQL fragments with bind parameters, in id order from {@code afterId}. */
    private PreparedStatement selectMatching(Connection c, String columns, EventFilter f, long afterId, int limit)
            throws SQLException {
        StringBuilder sql = new StringBuilder("SELECT ").append(columns).append(" FROM ").append(table)
                .append(" WHERE state = ANY(?) AND id > ?");
        List<Object> params = new ArrayList<>();
        params.add(c.createArrayOf("text", f.states().stream().map(Enum::name).sorted().toArray()));
        params.add(afterId);
        criterion(sql, params, " AND topic = ?", f.topic());
        criterion(sql, params, " AND event_type = ?", f.eventType());
        criterion(sql, params, " AND partition_key = ?", f.key());
        criterion(sql, params, " AND created_at >= ?", timestamp(f.createdFrom()));
        criterion(sql, params, " AND created_at < ?", timestamp(f.createdBefore()));
        criterion(sql, params, " AND failed_at >= ?", timestamp(f.failedFrom()));
        criterion(sql, params, " AND failed_at < ?", timestamp(f.failedBefore()));
        sql.append(" ORDER BY id LIMIT ?");
        params.add(limit);
        PreparedStatement ps = c.prepareStatement(sql.toString());
        for (int i = 0; i < params.size(); i++) {
            ps.setObject(i + 1, params.get(i));
        }
        return ps;
    }

    private static void criterion(StringBuilder sql, List<Object> params, String fragment, Object value) {
        if (value != null) {
            sql.append(fragment);
            params.add(value);
        }
    }

    private static OffsetDateTime timestamp(Instant i) {
        return i == null ? null : i.atOffset(ZoneOffset.UTC);
    }

    private static Instant instant(ResultSet rs, int column) throws SQLException {
        java.sql.Timestamp ts = rs.getTimestamp(column);
        return ts == null ? null : ts.toInstant();
    }

    @Override
    public Optional<EventDetails> event(UUID eventId, boolean withPayload) {
        Objects.requireNonNull(eventId, "eventId");
        String sql = "SELECT id, event_id, state, topic, partition_key, shard, aggregate_type, aggregate_id,"
                + " aggregate_version, event_type, headers::text, created_at, attempts, next_attempt_at, last_error,"
                + " failed_at, published_at, operator_action, operator_name, operator_at,"
                + " CASE WHEN ? THEN coalesce(convert_to(payload::text, 'UTF8'), payload_bytes) END"
                + " FROM " + table + " WHERE event_id = ?";
        return inTransaction("reading event " + eventId, c -> {
            try (PreparedStatement ps = c.prepareStatement(sql)) {
                ps.setBoolean(1, withPayload);
                ps.setObject(2, eventId);
                try (ResultSet rs = ps.executeQuery()) {
                    if (!rs.next()) {
                        return Optional.empty();
                    }
                    long version = rs.getLong(9);
                    Long aggregateVersion = rs.wasNull() ? null : version;
                    return Optional.of(new EventDetails(rs.getLong(1), (UUID) rs.getObject(2), rs.getString(3),
                            rs.getString(4), rs.getString(5), rs.getInt(6), rs.getString(7), rs.getString(8),
                            aggregateVersion, rs.getString(10), rs.getString(11), instant(rs, 12), rs.getInt(13),
                            instant(rs, 14), rs.getString(15), instant(rs, 16), instant(rs, 17), rs.getString(18),
                            rs.getString(19), instant(rs, 20), rs.getBytes(21)));
                }
            }
        });
    }

    private static void checkOperator(String operator) {
        if (operator == null) {
            return;
        }
        if (operator.isBlank() || operator.length() > 200 || operator.chars().anyMatch(Character::isISOControl)) {
            throw new IllegalArgumentException("operator must name who makes the change (1 to 200 printable"
                    + " characters, e.g. a user name or a ticket), or be null for the database user; was '"
                    + io.txoutbox.internal.MessageRules.printable(operator) + "'");
        }
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

}
