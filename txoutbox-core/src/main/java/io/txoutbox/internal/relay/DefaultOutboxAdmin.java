package io.txoutbox.internal.relay;

import io.txoutbox.OutboxAdmin;
import io.txoutbox.OutboxException;
import io.txoutbox.OutboxGrants;
import io.txoutbox.OutboxSchema;
import io.txoutbox.internal.Privileges;
import io.txoutbox.internal.pg.ReadCommitted;
import io.txoutbox.internal.pg.AdminStatements;
import io.txoutbox.internal.progress.ProgressModels;
import io.txoutbox.internal.pg.AdminStatements.Change;
import io.txoutbox.internal.pg.EventState;
import io.txoutbox.internal.pg.Jdbc;
import io.txoutbox.internal.pg.PgErrors;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Instant;
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
    private final AdminStatements sql;

    private static final int BULK_PAGE = 1_000;
    private static final String[] FAILED = {EventState.DEAD.name(), EventState.PARKED.name()};

    public DefaultOutboxAdmin(DataSource dataSource, OutboxSchema schema) {
        this.dataSource = dataSource;
        this.sql = new AdminStatements(schema, ProgressModels.of(schema)::pending);
    }

    @Override
    public List<LaneOwner> laneOwners() {
        return inTransaction("listing lane owners", c -> {
            List<LaneOwner> out = new ArrayList<>();
            try (PreparedStatement ps = c.prepareStatement(sql.laneOwners())) {
                Jdbc.bind(ps, sql.laneOwnerBinds());
                try (ResultSet rs = ps.executeQuery()) {
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
            }
            return out;
        });
    }

    @Override
    public java.util.Map<Integer, Long> pendingByShard() {
        return inTransaction("counting pending events per shard", c -> {
            java.util.Map<Integer, Long> out = new java.util.TreeMap<>();
            try (PreparedStatement ps = c.prepareStatement(sql.pendingByShard()); ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    out.put(rs.getInt(1), rs.getLong(2));
                }
            }
            return out;
        });
    }

    private <T> T inTransaction(String what, ReadCommitted.Work<T> work) {
        try {
            return ReadCommitted.transaction(dataSource, work);
        } catch (SQLException e) {
            String hint = PgErrors.is(e, PgErrors.UNDEFINED_COLUMN) ? "; the outbox table is older than this version"
                    + " of txoutbox: run OutboxSchema.migrate (or apply V3__operations.sql with your migration tool)"
                    : "";
            throw new OutboxException(what + " failed: " + e.getMessage() + " (SQLState " + e.getSQLState() + ")"
                    + hint + Privileges.hint(e, OutboxGrants.Component.ADMIN), e, PgErrors.isRetriable(e));
        }
    }

    @Override
    public List<ParkedKey> parkedKeys(int limit) {
        return inTransaction("listing parked keys", c -> {
            List<ParkedKey> out = new ArrayList<>();
            try (PreparedStatement ps = c.prepareStatement(sql.parkedKeys())) {
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
        return inTransaction("listing dead events", c -> {
            List<DeadEvent> out = new ArrayList<>();
            try (PreparedStatement ps = c.prepareStatement(sql.deadEvents())) {
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
        return changeOne("requeue", Change.REQUEUE, FAILED, eventId, operator);
    }

    @Override
    public long requeue(EventFilter filter, String operator) {
        return changeMatching("requeue", Change.REQUEUE, filter, operator);
    }

    @Override
    public boolean discard(UUID eventId, String operator) {
        return changeOne("discard", Change.DISCARD, FAILED, eventId, operator);
    }

    @Override
    public long discard(EventFilter filter, String operator) {
        return changeMatching("discard", Change.DISCARD, filter, operator);
    }

    @Override
    public boolean skip(UUID eventId, String operator) {
        return changeOne("skip", Change.SKIP, new String[] {EventState.PARKED.name()}, eventId, operator);
    }

    private boolean changeOne(String action, Change change, String[] fromStates, UUID eventId, String operator) {
        Objects.requireNonNull(eventId, "eventId");
        checkOperator(operator);
        boolean changed = inTransaction(action + " of event " + eventId, c -> {
            if (change != Change.REQUEUE) {
                releaseNext(c, new UUID[] {eventId});
            }
            try (PreparedStatement ps = c.prepareStatement(sql.changeOne(change))) {
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
        try (PreparedStatement ps = c.prepareStatement(sql.releaseNext())) {
            ps.setArray(1, c.createArrayOf("uuid", eventIds));
            ps.executeUpdate();
        }
    }

    /**
     * Pages of {@value #BULK_PAGE} matching rows in id order, each changed in its own short transaction; a row that
     * left the expected state in between (a relay sent it, another operator changed it) is not touched.
     */
    private long changeMatching(String action, Change change, EventFilter filter, String operator) {
        Objects.requireNonNull(filter, "filter");
        checkOperator(operator);
        String[] states = filter.states().stream().map(Enum::name).filter(s -> !s.equals(EventState.DISCARDED.name()))
                .sorted().toArray(String[]::new);
        if (states.length == 0) {
            throw new IllegalArgumentException(action + " applies to PARKED or DEAD events; the filter names only "
                    + filter.states());
        }
        EventFilter effective = new EventFilter(
                java.util.Arrays.stream(states).map(FailedState::valueOf).collect(java.util.stream.Collectors.toSet()),
                filter.topic(), filter.eventType(), filter.key(), filter.createdFrom(), filter.createdBefore(),
                filter.failedFrom(), filter.failedBefore());
        String update = sql.changeMatching(change);
        long total = 0;
        long after = 0;
        while (true) {
            long from = after;
            long[] lastAndCount = inTransaction(action + " of matching events", c -> {
                List<UUID> ids = new ArrayList<>();
                long last = from;
                try (PreparedStatement ps = selectMatching(c, AdminStatements.MATCHING_IDS, effective, from, BULK_PAGE);
                        ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) {
                        ids.add((UUID) rs.getObject(1));
                        last = rs.getLong(2);
                    }
                }
                if (ids.isEmpty()) {
                    return new long[] {last, 0, 0};
                }
                if (change != Change.REQUEUE) {
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
            try (PreparedStatement ps = selectMatching(c, AdminStatements.FAILED_EVENT_COLUMNS, filter,
                    afterId, limit); ResultSet rs = ps.executeQuery()) {
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

    /** The filter's query ({@link AdminStatements#matching}), bound, in id order from {@code afterId}. */
    private PreparedStatement selectMatching(Connection c, String columns, EventFilter f, long afterId, int limit)
            throws SQLException {
        AdminStatements.Matching m = sql.matching(columns, f);
        List<Object> params = new ArrayList<>();
        params.add(c.createArrayOf("text", f.states().stream().map(Enum::name).sorted().toArray()));
        params.add(afterId);
        params.addAll(m.criteria());
        params.add(limit);
        PreparedStatement ps = c.prepareStatement(m.sql());
        Jdbc.bind(ps, params.toArray());
        return ps;
    }

    private static Instant instant(ResultSet rs, int column) throws SQLException {
        java.sql.Timestamp ts = rs.getTimestamp(column);
        return ts == null ? null : ts.toInstant();
    }

    @Override
    public Optional<EventDetails> event(UUID eventId, boolean withPayload) {
        Objects.requireNonNull(eventId, "eventId");
        return inTransaction("reading event " + eventId, c -> {
            try (PreparedStatement ps = c.prepareStatement(sql.event())) {
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
            return Jdbc.queryLong(c, sql.pendingCount()).orElseThrow();
        });
    }

}
