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
import io.txoutbox.internal.pg.InboxStatements;
import io.txoutbox.internal.pg.Jdbc;
import io.txoutbox.internal.pg.PgErrors;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Savepoint;
import java.sql.Types;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.UUID;

/** {@link Inbox} on PostgreSQL: statements on the caller's connection only. */
public final class DefaultInbox implements Inbox {

    private final InboxStatements statements;

    public DefaultInbox(OutboxSchema schema) {
        this.statements = new InboxStatements(schema.schema());
    }

    @Override
    public Outcome once(Connection c, String consumer, UUID eventId, AggregateVersion version, Work work) {
        Objects.requireNonNull(eventId, "eventId");
        Objects.requireNonNull(work, "work");
        InboxWorkerConfig.requireConsumer("inbox.consumer", consumer);
        requireTransaction(c, "once", eventId);
        try {
            if (Jdbc.update(c, statements.insertProcessed(), consumer, eventId) == 0) {
                return Outcome.DUPLICATE;
            }
            if (version != null && Jdbc.update(c, statements.applyVersion(), consumer, version.aggregateType(),
                    version.aggregateId(), version.version()) == 0) {
                return Outcome.STALE_VERSION;
            }
        } catch (SQLException e) {
            throw new OutboxException("inbox: recording event " + eventId + " for consumer " + consumer
                    + " failed: " + e.getMessage() + " (SQLState " + e.getSQLState() + "); roll back the transaction"
                    + " (is the schema migrated?)" + Privileges.hint(e, OutboxGrants.Component.DEDUPE), e,
                    PgErrors.isRetriable(e));
        }
        try {
            work.apply(c);
        } catch (RuntimeException e) {
            throw e;
        } catch (SQLException e) {
            throw new OutboxException("inbox: work for event " + eventId + " of consumer " + consumer + " failed: "
                    + e.getMessage() + " (SQLState " + e.getSQLState() + ")", e, PgErrors.isRetriable(e));
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
        try {
            return insert(c, consumer, messages);
        } catch (SQLException e) {
            throw storingFailed(consumer, messages, e);
        }
    }

    /** A message of {@link #receiveEach} that the database refused for a reason of its own row. */
    public record Refused(int index, SQLException cause) {
    }

    /** What {@link #receiveEach} did: rows inserted (duplicates excluded) and the messages refused. */
    public record Received(int inserted, List<Refused> refused) {
    }

    /**
     * Like {@link #receive}, but a row the database refuses for a reason of its own ({@link #isRowError}: bad data, a
     * constraint, a size limit, a trigger's exception) does not fail the others: the batch runs under a savepoint,
     * and only when it fails is each message inserted under a savepoint of its own to find the refused ones. Any
     * other failure (connection, timeout, missing table or privilege) is thrown: the caller rolls back and retries.
     */
    public Received receiveEach(Connection c, String consumer, List<InboxMessage> messages) {
        InboxWorkerConfig.requireConsumer("inbox.consumer", consumer);
        Objects.requireNonNull(messages, "messages");
        if (messages.isEmpty()) {
            return new Received(0, List.of());
        }
        requireTransaction(c, "receive", messages.get(0).eventId());
        try {
            Savepoint whole = c.setSavepoint();
            try {
                int inserted = insert(c, consumer, messages);
                c.releaseSavepoint(whole);
                return new Received(inserted, List.of());
            } catch (SQLException e) {
                c.rollback(whole); // throws when the connection is gone: then everything is retried
                if (!isRowError(e)) {
                    throw e;
                }
            }
            int inserted = 0;
            List<Refused> refused = new ArrayList<>();
            for (int i = 0; i < messages.size(); i++) {
                Savepoint one = c.setSavepoint();
                try {
                    inserted += insert(c, consumer, messages.subList(i, i + 1));
                    c.releaseSavepoint(one);
                } catch (SQLException e) {
                    c.rollback(one);
                    if (!isRowError(e)) {
                        throw e;
                    }
                    refused.add(new Refused(i, e));
                }
            }
            return new Received(inserted, List.copyOf(refused));
        } catch (SQLException e) {
            throw storingFailed(consumer, messages, e);
        }
    }

    /**
     * Stores a received message that cannot be stored as it is as a {@code DEAD} row with {@code reason} in
     * {@code last_error}: the whole message if the database takes it, else (the row itself is refused) only where it
     * came from and why, with that said in {@code last_error}. Returns false when the row was already there.
     * Thrown when even the bare row is refused: that is no longer about the record.
     */
    public boolean storeDead(Connection c, String consumer, InboxMessage m, String reason) {
        InboxWorkerConfig.requireConsumer("inbox.consumer", consumer);
        requireTransaction(c, "storeDead", m.eventId());
        try {
            Savepoint sp = c.setSavepoint();
            try (PreparedStatement ps = c.prepareStatement(statements.insertDead())) {
                int i = bind(ps, 1, consumer, m);
                ps.setString(i, truncate(reason));
                int n = ps.executeUpdate();
                c.releaseSavepoint(sp);
                return n == 1;
            } catch (SQLException e) {
                c.rollback(sp);
                if (!isRowError(e)) {
                    throw e;
                }
                try (PreparedStatement ps = c.prepareStatement(statements.insertDeadBare())) {
                    ps.setString(1, consumer);
                    ps.setObject(2, m.eventId());
                    ps.setString(3, m.sourceTopic());
                    setInt(ps, 4, m.sourcePartition());
                    setLong(ps, 5, m.sourceOffset());
                    ps.setString(6, truncate("key, headers and payload not stored (" + e.getMessage() + ", SQLState "
                            + e.getSQLState() + "); the record stays at " + m.sourceTopic() + "-"
                            + m.sourcePartition() + "@" + m.sourceOffset() + " until the topic's retention: "
                            + reason));
                    return ps.executeUpdate() == 1;
                }
            }
        } catch (SQLException e) {
            throw new OutboxException("inbox: storing event " + m.eventId() + " of consumer " + consumer + " as DEAD "
                    + "failed: " + e.getMessage() + " (SQLState " + e.getSQLState() + "); roll back the transaction",
                    e, PgErrors.isRetriable(e));
        }
    }

    /**
     * True for errors about one row's values: data exceptions (22: invalid text, out of range), integrity
     * constraints (23: a CHECK of your own), program limits (54: a value too large to index) and exceptions raised
     * by a trigger (P0). Everything else is about the database or the schema and affects every row alike.
     */
    public static boolean isRowError(SQLException e) {
        String state = e.getSQLState();
        if (state == null || state.length() < 2) {
            return false;
        }
        return switch (state.substring(0, 2)) {
            case "22", "23", "54", "P0" -> true;
            default -> false;
        };
    }

    private int insert(Connection c, String consumer, List<InboxMessage> messages) throws SQLException {
        int inserted = 0;
        for (int from = 0; from < messages.size(); from += Outbox.MAX_ROWS_PER_STATEMENT) {
            List<InboxMessage> chunk = messages.subList(from,
                    Math.min(messages.size(), from + Outbox.MAX_ROWS_PER_STATEMENT));
            try (PreparedStatement ps = c.prepareStatement(statements.insertInbox(chunk.size()))) {
                int i = 1;
                for (InboxMessage m : chunk) {
                    i = bind(ps, i, consumer, m);
                }
                inserted += ps.executeUpdate();
            }
        }
        return inserted;
    }

    /**
     * Binds one row's {@value InboxStatements#INSERT_COLUMNS} values from {@code i} on; returns the next index. Keys
     * and header values are bytes: the text columns get their text forms ({@link InboxBytes}), the byte columns the
     * bytes exactly.
     */
    private static int bind(PreparedStatement ps, int i, String consumer, InboxMessage m) throws SQLException {
        ps.setString(i++, consumer);
        ps.setObject(i++, m.eventId());
        ps.setString(i++, InboxBytes.safeText(m.sourceTopic()));
        setInt(ps, i++, m.sourcePartition());
        setLong(ps, i++, m.sourceOffset());
        ps.setString(i++, InboxBytes.groupForm(m.keyBytes()));
        ps.setBytes(i++, m.keyBytes());
        ps.setString(i++, InboxBytes.safeText(m.eventType()));
        ps.setString(i++, InboxBytes.safeText(m.aggregateType()));
        ps.setString(i++, InboxBytes.safeText(m.aggregateId()));
        setLong(ps, i++, m.aggregateVersion());
        ps.setBytes(i++, m.payload());
        ps.setString(i++, JsonHeaders.write(m.headers()));
        ps.setBytes(i++, InboxBytes.needsHeaderBytes(m.headerBytes()) ? InboxBytes.encodeHeaders(m.headerBytes())
                : null);
        return i;
    }

    private static OutboxException storingFailed(String consumer, List<InboxMessage> messages, SQLException e) {
        return new OutboxException("inbox: storing " + messages.size() + " messages for consumer " + consumer
                + " (first event " + messages.get(0).eventId() + ") failed: " + e.getMessage() + " (SQLState "
                + e.getSQLState() + "); roll back the transaction"
                + Privileges.hint(e, OutboxGrants.Component.INBOX_RECEIVER), e, PgErrors.isRetriable(e));
    }

    private static String truncate(String s) {
        return s.length() <= 1000 ? s : s.substring(0, 1000) + "…";
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
