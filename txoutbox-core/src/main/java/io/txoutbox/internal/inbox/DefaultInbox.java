package io.txoutbox.internal.inbox;

import io.txoutbox.Inbox;
import io.txoutbox.InboxMessage;
import io.txoutbox.InboxWorkerConfig;
import io.txoutbox.Outbox;
import io.txoutbox.OutboxException;
import io.txoutbox.OutboxGrants;
import io.txoutbox.OutboxSchema;
import io.txoutbox.internal.JsonHeaders;
import io.txoutbox.internal.Privileges;
import io.txoutbox.internal.SqlErrors;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Types;
import java.util.List;
import java.util.Objects;
import java.util.UUID;

/** {@link Inbox} on PostgreSQL: statements on the caller's connection only. */
public final class DefaultInbox implements Inbox {

    private final InboxSql sql;

    public DefaultInbox(OutboxSchema schema) {
        this.sql = new InboxSql(schema.schema());
    }

    @Override
    public Outcome once(Connection c, String consumer, UUID eventId, AggregateVersion version, Work work) {
        Objects.requireNonNull(eventId, "eventId");
        Objects.requireNonNull(work, "work");
        InboxWorkerConfig.requireConsumer("inbox.consumer", consumer);
        requireTransaction(c, "once", eventId);
        try {
            try (PreparedStatement ps = c.prepareStatement(sql.insertProcessed)) {
                ps.setString(1, consumer);
                ps.setObject(2, eventId);
                if (ps.executeUpdate() == 0) {
                    return Outcome.DUPLICATE;
                }
            }
            if (version != null) {
                try (PreparedStatement ps = c.prepareStatement(sql.applyVersion)) {
                    ps.setString(1, consumer);
                    ps.setString(2, version.aggregateType());
                    ps.setString(3, version.aggregateId());
                    ps.setLong(4, version.version());
                    if (ps.executeUpdate() == 0) {
                        return Outcome.STALE_VERSION;
                    }
                }
            }
        } catch (SQLException e) {
            throw new OutboxException("inbox: recording event " + eventId + " for consumer " + consumer
                    + " failed: " + e.getMessage() + " (SQLState " + e.getSQLState() + "); roll back the transaction"
                    + " (is the schema migrated?)" + Privileges.hint(e, OutboxGrants.Component.DEDUPE), e,
                    SqlErrors.isRetriable(e));
        }
        try {
            work.apply(c);
        } catch (RuntimeException e) {
            throw e;
        } catch (SQLException e) {
            throw new OutboxException("inbox: work for event " + eventId + " of consumer " + consumer + " failed: "
                    + e.getMessage() + " (SQLState " + e.getSQLState() + ")", e, SqlErrors.isRetriable(e));
        } catch (Exception e) {
            if (e instanceof InterruptedException) {
                Thread.currentThread().interrupt();
            }
            throw new OutboxException("inbox: work for event " + eventId + " of consumer " + consumer + " failed: "
                    + e, e, true);
        }
        return Outcome.APPLIED;
    }

    @Override
    public int receive(Connection c, String consumer, List<InboxMessage> messages) {
        InboxWorkerConfig.requireConsumer("inbox.consumer", consumer);
        Objects.requireNonNull(messages, "messages");
        if (messages.isEmpty()) {
            return 0;
        }
        requireTransaction(c, "receive", messages.get(0).eventId());
        int inserted = 0;
        try {
            for (int from = 0; from < messages.size(); from += Outbox.MAX_ROWS_PER_STATEMENT) {
                List<InboxMessage> chunk = messages.subList(from,
                        Math.min(messages.size(), from + Outbox.MAX_ROWS_PER_STATEMENT));
                try (PreparedStatement ps = c.prepareStatement(sql.insertInbox(chunk.size()))) {
                    int i = 1;
                    for (InboxMessage m : chunk) {
                        ps.setString(i++, consumer);
                        ps.setObject(i++, m.eventId());
                        ps.setString(i++, m.sourceTopic());
                        setInt(ps, i++, m.sourcePartition());
                        setLong(ps, i++, m.sourceOffset());
                        ps.setString(i++, m.key());
                        ps.setString(i++, m.eventType());
                        ps.setString(i++, m.aggregateType());
                        ps.setString(i++, m.aggregateId());
                        setLong(ps, i++, m.aggregateVersion());
                        ps.setBytes(i++, m.payload());
                        ps.setString(i++, JsonHeaders.write(m.headers()));
                    }
                    inserted += ps.executeUpdate();
                }
            }
        } catch (SQLException e) {
            throw new OutboxException("inbox: storing " + messages.size() + " messages for consumer " + consumer
                    + " (first event " + messages.get(0).eventId() + ") failed: " + e.getMessage() + " (SQLState "
                    + e.getSQLState() + "); roll back the transaction"
                    + Privileges.hint(e, OutboxGrants.Component.INBOX_RECEIVER), e, SqlErrors.isRetriable(e));
        }
        return inserted;
    }

    private static void setInt(PreparedStatement ps, int i, Integer v) throws SQLException {
        if (v == null) {
            ps.setNull(i, Types.INTEGER);
        } else {
            ps.setInt(i, v);
        }
    }

    private static void setLong(PreparedStatement ps, int i, Long v) throws SQLException {
        if (v == null) {
            ps.setNull(i, Types.BIGINT);
        } else {
            ps.setLong(i, v);
        }
    }

    private static void requireTransaction(Connection c, String what, UUID eventId) {
        Objects.requireNonNull(c, "connection");
        boolean autoCommit;
        try {
            autoCommit = c.getAutoCommit();
        } catch (SQLException e) {
            throw new OutboxException("inbox: " + what + " of event " + eventId + ": connection unusable: "
                    + e.getMessage(), e, true);
        }
        if (autoCommit) {
            throw new OutboxException("inbox: " + what + " of event " + eventId + " needs a connection in a "
                    + "transaction (autoCommit=false): in autocommit mode the dedupe row and the effects would "
                    + "commit separately; call setAutoCommit(false) and commit after the work");
        }
    }
}
