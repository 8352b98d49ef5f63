package io.txoutbox.internal.inbox;

import io.txoutbox.EventDetails;
import io.txoutbox.EventFilter;
import io.txoutbox.FailedEvent;
import io.txoutbox.FailedState;
import io.txoutbox.InboxAdmin;
import io.txoutbox.InboxWorkerConfig;
import io.txoutbox.InvalidConfigurationException;
import io.txoutbox.OutboxException;
import io.txoutbox.OutboxGrants;
import io.txoutbox.OutboxSchema;
import io.txoutbox.internal.OperatorCalls;
import io.txoutbox.internal.Privileges;
import io.txoutbox.internal.StatusSql;
import io.txoutbox.internal.pg.InboxAdminStatements;
import io.txoutbox.internal.pg.Jdbc;
import io.txoutbox.internal.pg.OperatorStatements.Bound;
import io.txoutbox.internal.pg.OperatorStatements.Change;
import io.txoutbox.internal.pg.PgErrors;
import io.txoutbox.internal.pg.ReadCommitted;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.UUID;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** The SQL behind {@link InboxAdmin}. */
public final class DefaultInboxAdmin implements InboxAdmin {

    private static final Logger log = LoggerFactory.getLogger(DefaultInboxAdmin.class);
    private static final Set<FailedState> PARKED_OR_DEAD = EnumSet.of(FailedState.PARKED, FailedState.DEAD);

    private final DataSource dataSource;
    private final InboxAdminStatements statements;

    public DefaultInboxAdmin(DataSource dataSource, OutboxSchema schema) {
        this.dataSource = dataSource;
        this.statements = new InboxAdminStatements(schema.schema());
    }

    private <T> T inTransaction(String what, ReadCommitted.Work<T> work) {
        try {
            return ReadCommitted.transaction(dataSource, work);
        } catch (SQLException e) {
            String hint = PgErrors.is(e, PgErrors.UNDEFINED_COLUMN) ? "; the inbox table is older than this version"
                    + " of txoutbox: run OutboxSchema.migrate (or apply V10__inbox_operations.sql with your migration"
                    + " tool)" : "";
            throw new OutboxException(what + " failed: " + e.getMessage() + " (SQLState " + e.getSQLState() + ")"
                    + hint + Privileges.hint(e, what.startsWith("purging") ? OutboxGrants.Component.INBOX_RETENTION
                            : OutboxGrants.Component.ADMIN), e, PgErrors.isRetriable(e));
        }
    }

    @Override
    public List<FailedEvent> list(EventFilter filter, long afterId, int limit) {
        OperatorCalls.requireConsumer("list", filter);
        OperatorCalls.requireLimit(limit);
        Bound list = statements.list(filter, afterId, limit);
        return inTransaction("listing failed inbox events of " + filter.consumer(), c -> {
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
    public Optional<EventDetails> show(String consumer, UUID eventId, boolean withPayload) {
        InboxWorkerConfig.requireConsumer("inboxAdmin.consumer", consumer);
        Objects.requireNonNull(eventId, "eventId");
        return inTransaction("reading inbox event " + eventId + " of " + consumer, c -> {
            try (PreparedStatement ps = c.prepareStatement(statements.show())) {
                Jdbc.bind(ps, withPayload, consumer, eventId);
                try (ResultSet rs = ps.executeQuery()) {
                    return rs.next() ? Optional.of(OperatorCalls.details(rs)) : Optional.empty();
                }
            }
        });
    }

    @Override
    public boolean requeue(String consumer, UUID eventId, String operator) {
        return changeOne("requeue", Change.REQUEUE, PARKED_OR_DEAD, consumer, eventId, operator);
    }

    @Override
    public long requeue(EventFilter filter, String operator) {
        return changeMatching("requeue", Change.REQUEUE, filter, operator);
    }

    @Override
    public boolean discard(String consumer, UUID eventId, String operator) {
        return changeOne("discard", Change.DISCARD, PARKED_OR_DEAD, consumer, eventId, operator);
    }

    @Override
    public long discard(EventFilter filter, String operator) {
        return changeMatching("discard", Change.DISCARD, filter, operator);
    }

    @Override
    public boolean skip(String consumer, UUID eventId, String operator) {
        return changeOne("skip", Change.SKIP, EnumSet.of(FailedState.PARKED), consumer, eventId, operator);
    }

    private boolean changeOne(String action, Change change, Set<FailedState> from, String consumer, UUID eventId,
            String operator) {
        InboxWorkerConfig.requireConsumer("inboxAdmin.consumer", consumer);
        Objects.requireNonNull(eventId, "eventId");
        OperatorCalls.requireOperator(operator);
        boolean changed = inTransaction(action + " of inbox event " + eventId + " of " + consumer,
                c -> change(c, change, from, consumer, new UUID[] {eventId}, operator) == 1);
        log.info("txoutbox-inbox-admin: {} of event {} for consumer {} by {}: {}", action, eventId, consumer,
                OperatorCalls.who(operator), changed ? "done" : "not " + String.join(" or ",
                        from.stream().map(Enum::name).sorted().toList()).toLowerCase(Locale.ROOT));
        return changed;
    }

    /** The change of the consumer's {@code ids} still in {@code from}. */
    private int change(Connection c, Change change, Set<FailedState> from, String consumer, UUID[] ids,
            String operator) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(statements.change(change))) {
            ps.setString(1, operator);
            ps.setString(2, consumer);
            ps.setArray(3, c.createArrayOf("uuid", ids));
            ps.setArray(4, c.createArrayOf("text", from.stream().map(Enum::name).sorted().toArray()));
            return ps.executeUpdate();
        }
    }

    /** Pages of matching rows in id order, each changed in a short transaction ({@link OperatorCalls#inPages}). */
    private long changeMatching(String action, Change change, EventFilter filter, String operator) {
        OperatorCalls.requireConsumer(action, filter);
        OperatorCalls.requireOperator(operator);
        Set<FailedState> states = OperatorCalls.changeable(action, filter);
        long total = OperatorCalls.inPages(after -> inTransaction(action + " of matching inbox events of "
                + filter.consumer(), c -> {
            Bound page = statements.matchingIds(states, filter, after, OperatorCalls.BULK_PAGE);
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
            int changed = ids.isEmpty() ? 0
                    : change(c, change, states, filter.consumer(), ids.toArray(new UUID[0]), operator);
            return new OperatorCalls.PageDone(last, ids.size(), changed);
        }));
        log.info("txoutbox-inbox-admin: {} of {} events matching {} by {}", action, total, filter,
                OperatorCalls.who(operator));
        return total;
    }

    @Override
    public long pendingCount(String consumer) {
        return inTransaction("counting pending inbox events",
                c -> Jdbc.queryLong(c, statements.pendingCount(), consumer).orElse(0));
    }

    @Override
    public List<ConsumerBacklog> backlog() {
        return inTransaction("reading the inbox backlog of schema " + statements.schemaName(), c -> {
            StatusSql.boundStatusReads(c);
            Map<String, ConsumerBacklog> out = new TreeMap<>();
            try (PreparedStatement ps = c.prepareStatement(statements.backlogPending());
                    ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    out.put(rs.getString(1), new ConsumerBacklog(rs.getString(1), rs.getLong(2),
                            Duration.ofNanos(rs.getLong(3) * 1_000), 0, 0));
                }
            }
            try (PreparedStatement ps = c.prepareStatement(statements.backlogFailed());
                    ResultSet rs = ps.executeQuery()) {
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
        long processed = deleteInBatches("purging processed_event", statements.purgeProcessedEvents(),
                processedEventRetention.toMillis(), batchSize);
        long inbox = deleteInBatches("purging processed inbox rows", statements.purgeProcessedInbox(),
                inboxRetention.toMillis(), batchSize);
        log.info("txoutbox-inbox-admin: purged {} processed_event rows older than {} and {} processed inbox rows "
                + "older than {}", processed, processedEventRetention, inbox, inboxRetention);
        return new Purged(processed, inbox);
    }

    private long deleteInBatches(String what, String statement, long ageMs, int batchSize) {
        long total = 0;
        while (true) {
            int n = inTransaction(what, c -> Jdbc.update(c, statement, ageMs, batchSize));
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
}
