package io.txoutbox.internal;

import io.txoutbox.InvalidMessageException;
import io.txoutbox.Outbox;
import io.txoutbox.OutboxConfig;
import io.txoutbox.OutboxException;
import io.txoutbox.OutboxMessage;
import io.txoutbox.OutboxSchema;
import io.txoutbox.PollingRelay;
import io.txoutbox.Payload;
import io.txoutbox.internal.pg.PgErrors;
import io.txoutbox.internal.pg.WriterStatements;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Types;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.UUID;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** The JDBC writer behind {@link Outbox}: validates everything, then INSERTs in the caller's transaction. */
public final class DefaultOutbox implements Outbox {

    private static final Logger log = LoggerFactory.getLogger(DefaultOutbox.class);

    private final OutboxConfig config;
    private final WriterStatements sql;
    private final Runnable afterPublish;
    /** The in-process relay whose lanes of the written shards a publish nudges, or null. */
    private final PollingRelay relay;

    public DefaultOutbox(OutboxConfig config, Runnable afterPublish, PollingRelay relay) {
        this.config = config;
        this.sql = new WriterStatements(config.schema(), MAX_ROWS_PER_STATEMENT);
        this.afterPublish = afterPublish;
        this.relay = relay;
        log.info("txoutbox-outbox: writer ready on {}, serializer {}: {}", config.schema(),
                config.serializer().getClass().getSimpleName(), OutboxConfig.DESCRIPTOR.describe(config));
    }

    @Override
    public OutboxConfig config() {
        return config;
    }

    @Override
    public List<UUID> publish(Connection connection, List<OutboxMessage> messages) {
        Objects.requireNonNull(connection, "connection");
        Objects.requireNonNull(messages, "messages");
        if (messages.isEmpty()) {
            return List.of();
        }
        requireTransaction(connection);
        // Everything is checked and serialized before the first byte goes to PostgreSQL.
        List<Row> rows = new ArrayList<>(messages.size());
        for (OutboxMessage m : messages) {
            if (m == null) {
                throw new InvalidMessageException("messages[" + rows.size() + "] is null");
            }
            rows.add(prepare(m));
        }
        requireDistinctEventIds(rows);
        for (int from = 0; from < rows.size(); from += MAX_ROWS_PER_STATEMENT) {
            int to = Math.min(rows.size(), from + MAX_ROWS_PER_STATEMENT);
            insert(connection, rows.subList(from, to));
        }
        if (config.notifyOnPublish()) {
            notifyRelay(connection);
        }
        if (relay != null) {
            nudgeShards(rows);
        }
        if (afterPublish != null) {
            try {
                afterPublish.run();
            } catch (RuntimeException e) {
                log.warn("txoutbox-outbox: afterPublish callback failed; the events are written", e);
            }
        }
        List<UUID> ids = new ArrayList<>(rows.size());
        for (Row r : rows) {
            ids.add(r.message.eventId());
        }
        return ids;
    }

    /**
     * Two rows with one event id would fail the INSERT on the primary key, which aborts the caller's transaction; so
     * the call is refused here, before anything is sent. (An id already in the table is not looked up: that costs a
     * query per call, and the database still refuses it.)
     */
    private static void requireDistinctEventIds(List<Row> rows) {
        if (rows.size() < 2) {
            return;
        }
        Map<UUID, Integer> first = new HashMap<>(rows.size() * 2);
        for (int i = 0; i < rows.size(); i++) {
            Integer earlier = first.putIfAbsent(rows.get(i).message.eventId(), i);
            if (earlier != null) {
                throw new InvalidMessageException("event id " + rows.get(i).message.eventId() + " is given twice"
                        + " in one publish call, at messages[" + earlier + "] and messages[" + i + "]: every event"
                        + " needs its own id (leave eventId unset and a UUIDv7 is made). Nothing was written.");
            }
        }
    }

    /** Nudges the relay's lane of each shard written, once per shard. */
    private void nudgeShards(List<Row> rows) {
        OutboxSchema schema = config.schema();
        try {
            java.util.BitSet nudged = new java.util.BitSet(schema.shards());
            for (Row r : rows) {
                int shard = schema.shardOf(r.message);
                if (!nudged.get(shard)) {
                    nudged.set(shard);
                    relay.nudge(shard);
                }
            }
        } catch (RuntimeException e) {
            log.warn("txoutbox-outbox: nudging the relay failed; the events are written", e);
        }
    }

    /** PostgreSQL folds identical notifications of one transaction into one, delivered at commit. */
    private void notifyRelay(Connection connection) {
        try (PreparedStatement ps = connection.prepareStatement(sql.notifyRelay())) {
            ps.setString(1, config.schema().notifyChannel());
            ps.execute();
        } catch (SQLException e) {
            throw new OutboxException("publish wrote the events but NOTIFY failed: " + e.getMessage()
                    + ". The transaction is aborted: roll it back.", e, PgErrors.isRetriable(e));
        }
    }

    private static void requireTransaction(Connection connection) {
        boolean autoCommit;
        try {
            autoCommit = connection.getAutoCommit();
        } catch (SQLException e) {
            throw new OutboxException("publish could not read the connection's autocommit mode: " + e.getMessage(),
                    e, PgErrors.isRetriable(e));
        }
        if (autoCommit) {
            throw new OutboxException("publish needs a connection inside a transaction, but autocommit is on: the "
                    + "events would commit on their own, apart from the business rows. Call "
                    + "connection.setAutoCommit(false) before the business writes (or publish inside a Spring "
                    + "@Transactional method) and commit both together. Nothing was written.");
        }
    }

    private record Row(OutboxMessage message, String json, byte[] bytes, String headersJson) {
    }

    private Row prepare(OutboxMessage m) {
        if (config.schema().isPartitioned() && m.eventId().version() != 7) {
            throw new InvalidMessageException("event id " + m.eventId() + " is a version " + m.eventId().version()
                    + " UUID, but " + config.schema() + " files events by the time in their UUIDv7 ids: leave"
                    + " eventId unset (a UUIDv7 is made) or give a UUIDv7");
        }
        Payload payload = m.payload();
        if (payload instanceof Payload.ObjectValue object) {
            payload = serialize(m, object.value());
        }
        String json = null;
        byte[] bytes = null;
        long size = 0;
        if (payload instanceof Payload.Json j) {
            json = j.text();
            size = Utf8.length(json);
        } else if (payload instanceof Payload.Bytes b) {
            bytes = b.value();
            size = bytes.length;
        }
        if (size > config.maxPayloadBytes()) {
            throw new InvalidMessageException("payload of event " + m.eventId() + " is " + size
                    + " bytes, over the limit of " + config.maxPayloadBytes() + " (outbox.maxPayloadBytes): store "
                    + "large data elsewhere and send a reference, or raise the limit together with the broker's "
                    + "message.max.bytes");
        }
        long headerBytes = 0;
        for (Map.Entry<String, String> h : m.headers().entrySet()) {
            headerBytes += Utf8.length(h.getKey()) + Utf8.length(h.getValue());
        }
        if (headerBytes > config.maxHeaderBytes()) {
            throw new InvalidMessageException("headers of event " + m.eventId() + " are " + headerBytes
                    + " bytes, over the limit of " + config.maxHeaderBytes() + " (outbox.maxHeaderBytes)");
        }
        return new Row(m, json, bytes, JsonHeaders.write(m.headers()));
    }

    private Payload serialize(OutboxMessage m, Object value) {
        Payload p;
        try {
            p = config.serializer().serialize(value);
        } catch (Exception e) {
            throw new InvalidMessageException("payload of event " + m.eventId() + " (a "
                    + value.getClass().getName() + ") could not be serialized: " + e.getMessage(), e);
        }
        if (p instanceof Payload.Json j) {
            String problem = JsonSyntax.problem(j.text());
            if (problem != null) {
                throw new InvalidMessageException("the payload serializer produced invalid JSON for event "
                        + m.eventId() + ": " + problem);
            }
            return p;
        }
        if (p instanceof Payload.Bytes || p == Payload.none()) {
            return p;
        }
        throw new InvalidMessageException("the payload serializer must return JSON text, bytes or none for event "
                + m.eventId() + ", returned " + (p == null ? "null" : p.getClass().getSimpleName()));
    }

    private void insert(Connection connection, List<Row> rows) {
        try (PreparedStatement ps = connection.prepareStatement(sql.insert(rows.size()))) {
            int i = 1;
            for (Row r : rows) {
                OutboxMessage m = r.message;
                ps.setObject(i++, m.eventId());
                ps.setString(i++, m.topic());
                ps.setString(i++, m.key());
                ps.setString(i++, m.aggregateType());
                ps.setString(i++, m.aggregateId());
                if (m.aggregateVersion() == null) {
                    ps.setNull(i++, Types.BIGINT);
                } else {
                    ps.setLong(i++, m.aggregateVersion());
                }
                ps.setString(i++, m.eventType());
                ps.setString(i++, r.json);
                if (r.bytes == null) {
                    ps.setNull(i++, Types.BINARY);
                } else {
                    ps.setBytes(i++, r.bytes);
                }
                ps.setString(i++, r.headersJson);
            }
            ps.executeUpdate();
        } catch (SQLException e) {
            // Only a database-side problem gets here (lost connection, missing table, duplicate event id):
            // the caller's transaction is aborted, so say so.
            throw new OutboxException("publish of " + rows.size() + " event(s) starting with "
                    + rows.get(0).message.eventId() + " failed: " + e.getMessage() + " (SQLState " + e.getSQLState()
                    + "). The transaction is aborted: roll it back. "
                    + (PgErrors.is(e, PgErrors.UNDEFINED_TABLE) ? "Run OutboxSchema.migrate(dataSource) first." : "")
                    + Privileges.hint(e, io.txoutbox.OutboxGrants.Component.WRITER),
                    e, PgErrors.isRetriable(e));
        }
    }
}
