package io.txoutbox.internal.relay;

import io.txoutbox.EventDetails;
import io.txoutbox.EventFilter;
import io.txoutbox.FailedEvent;
import io.txoutbox.FailedState;
import io.txoutbox.OutboxAdmin;
import io.txoutbox.OutboxException;
import io.txoutbox.OutboxGrants;
import io.txoutbox.OutboxSchema;
import io.txoutbox.internal.OperatorCalls;
import io.txoutbox.internal.Privileges;
import io.txoutbox.internal.pg.AdminStatements;
import io.txoutbox.internal.pg.Jdbc;
import io.txoutbox.internal.pg.OperatorStatements.Bound;
import io.txoutbox.internal.pg.OperatorStatements.Change;
import io.txoutbox.internal.pg.PgErrors;
import io.txoutbox.internal.pg.ReadCommitted;
import io.txoutbox.internal.progress.ProgressModel;
import io.txoutbox.internal.progress.ProgressModels;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** The SQL behind {@link OutboxAdmin}. */
public final class DefaultOutboxAdmin implements OutboxAdmin {

    private static final Logger log = LoggerFactory.getLogger(DefaultOutboxAdmin.class);
    private static final Set<FailedState> PARKED_OR_DEAD = EnumSet.of(FailedState.PARKED, FailedState.DEAD);

    private final DataSource dataSource;
    private final AdminStatements sql;
    /** Releases the keys of parked heads a skip or discard gives up (the progress model's statement). */
    private final ProgressModel.Release releaseParked;

    public DefaultOutboxAdmin(DataSource dataSource, OutboxSchema schema) {
        this.dataSource = dataSource;
        ProgressModel progress = ProgressModels.of(schema);
        this.sql = new AdminStatements(schema, progress::pending);
        this.releaseParked = progress.releaseParked();
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
    public List<FailedEvent> list(EventFilter filter, long afterId, int limit) {
        OperatorCalls.requireNoConsumer(filter);
        OperatorCalls.requireLimit(limit);
        Bound list = sql.list(filter, afterId, limit);
        return inTransaction("listing failed events", c -> {
            List<FailedEvent> out = new ArrayList<>();
            try (PreparedStatement ps = c.prepareStatement(list.sql())) {
                Jdbc.bind(ps, list.bindArray());
                try (ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) {
                        out.add(OperatorCalls.failedEvent(rs));
                    }
                }
            }
            return out;
        });
    }

    @Override
    public Optional<EventDetails> show(UUID eventId, boolean withPayload) {
        Objects.requireNonNull(eventId, "eventId");
        return inTransaction("reading event " + eventId, c -> {
            try (PreparedStatement ps = c.prepareStatement(sql.show())) {
                ps.setBoolean(1, withPayload);
                ps.setObject(2, eventId);
                try (ResultSet rs = ps.executeQuery()) {
                    return rs.next() ? Optional.of(OperatorCalls.details(rs)) : Optional.empty();
                }
            }
        });
    }

    @Override
    public boolean requeue(UUID eventId, String operator) {
        return changeOne("requeue", Change.REQUEUE, PARKED_OR_DEAD, eventId, operator);
    }

    @Override
    public long requeue(EventFilter filter, String operator) {
        return changeMatching("requeue", Change.REQUEUE, filter, operator);
    }

    @Override
    public boolean discard(UUID eventId, String operator) {
        return changeOne("discard", Change.DISCARD, PARKED_OR_DEAD, eventId, operator);
    }

    @Override
    public long discard(EventFilter filter, String operator) {
        return changeMatching("discard", Change.DISCARD, filter, operator);
    }

    @Override
    public boolean skip(UUID eventId, String operator) {
        return changeOne("skip", Change.SKIP, EnumSet.of(FailedState.PARKED), eventId, operator);
    }

    private boolean changeOne(String action, Change change, Set<FailedState> from, UUID eventId, String operator) {
        Objects.requireNonNull(eventId, "eventId");
        OperatorCalls.requireOperator(operator);
        boolean changed = inTransaction(action + " of event " + eventId,
                c -> change(c, change, from, new UUID[] {eventId}, operator) == 1);
        log.info("txoutbox-admin: {} of event {} by {}: {}", action, eventId, OperatorCalls.who(operator),
                changed ? "done" : "not " + String.join(" or ", from.stream().map(Enum::name).sorted().toList())
                        .toLowerCase(Locale.ROOT));
        return changed;
    }

    /** The change of {@code ids} still in {@code from}; a skip or discard first releases their parked keys. */
    private int change(Connection c, Change change, Set<FailedState> from, UUID[] ids, String operator)
            throws SQLException {
        boolean release = change != Change.REQUEUE;
        if (release && !releaseParked.afterChange()) {
            release(c, ids);
        }
        int changed;
        try (PreparedStatement ps = c.prepareStatement(sql.change(change))) {
            ps.setString(1, operator);
            ps.setArray(2, c.createArrayOf("uuid", ids));
            ps.setArray(3, c.createArrayOf("text", from.stream().map(Enum::name).sorted().toArray()));
            changed = ps.executeUpdate();
        }
        if (release && releaseParked.afterChange()) {
            release(c, ids);
        }
        return changed;
    }

    /** The progress model's release of the parked keys of {@code ids} ({@link ProgressModel#releaseParked}). */
    private void release(Connection c, UUID[] ids) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(releaseParked.sql())) {
            ps.setArray(1, c.createArrayOf("uuid", ids));
            ps.executeUpdate();
        }
    }

    /** Pages of matching rows in id order, each changed in a short transaction ({@link OperatorCalls#inPages}). */
    private long changeMatching(String action, Change change, EventFilter filter, String operator) {
        OperatorCalls.requireNoConsumer(filter);
        OperatorCalls.requireOperator(operator);
        Set<FailedState> states = OperatorCalls.changeable(action, filter);
        long total = OperatorCalls.inPages(after -> inTransaction(action + " of matching events", c -> {
            Bound page = sql.matchingIds(states, filter, after, OperatorCalls.BULK_PAGE);
            List<UUID> ids = new ArrayList<>();
            long last = after;
            try (PreparedStatement ps = c.prepareStatement(page.sql())) {
                Jdbc.bind(ps, page.bindArray());
                try (ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) {
                        ids.add((UUID) rs.getObject(1));
                        last = rs.getLong(2);
                    }
                }
            }
            int changed = ids.isEmpty() ? 0 : change(c, change, states, ids.toArray(new UUID[0]), operator);
            return new OperatorCalls.PageDone(last, ids.size(), changed);
        }));
        log.info("txoutbox-admin: {} of {} events matching {} by {}", action, total, filter,
                OperatorCalls.who(operator));
        return total;
    }
}
