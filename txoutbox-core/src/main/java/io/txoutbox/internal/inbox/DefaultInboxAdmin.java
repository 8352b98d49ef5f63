package io.txoutbox.internal.inbox;

import io.txoutbox.InboxAdmin;
import io.txoutbox.InboxWorkerConfig;
import io.txoutbox.InvalidConfigurationException;
import io.txoutbox.OutboxException;
import io.txoutbox.OutboxGrants;
import io.txoutbox.OutboxSchema;
import io.txoutbox.internal.Privileges;
import io.txoutbox.internal.pg.ReadCommitted;
import io.txoutbox.internal.StatusSql;
import io.txoutbox.internal.pg.InboxAdminStatements;
import io.txoutbox.internal.pg.Jdbc;
import io.txoutbox.internal.pg.PgErrors;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.UUID;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** The SQL behind {@link InboxAdmin}. */
public final class DefaultInboxAdmin implements InboxAdmin {

    private static final Logger log = LoggerFactory.getLogger(DefaultInboxAdmin.class);

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
            throw new OutboxException(what + " failed: " + e.getMessage() + " (SQLState " + e.getSQLState() + ")"
                    + Privileges.hint(e, what.startsWith("purging") ? OutboxGrants.Component.INBOX_RETENTION
                            : OutboxGrants.Component.ADMIN), e, PgErrors.isRetriable(e));
        }
    }

    @Override
    public List<ParkedKey> parkedKeys(String consumer, int limit) {
        InboxWorkerConfig.requireConsumer("inboxAdmin.consumer", consumer);
        return inTransaction("listing parked inbox keys of " + consumer, c -> {
            List<ParkedKey> out = new ArrayList<>();
            try (PreparedStatement ps = c.prepareStatement(statements.parkedKeys())) {
                ps.setString(1, consumer);
                ps.setInt(2, limit);
                try (ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) {
                        out.add(new ParkedKey(consumer, rs.getString(1), (UUID) rs.getObject(2), rs.getString(3),
                                rs.getInt(4), rs.getString(5), rs.getTimestamp(6).toInstant(), rs.getLong(7)));
                    }
                }
            }
            return out;
        });
    }

    @Override
    public List<DeadEvent> deadEvents(String consumer, int limit) {
        InboxWorkerConfig.requireConsumer("inboxAdmin.consumer", consumer);
        return inTransaction("listing dead inbox events of " + consumer, c -> {
            List<DeadEvent> out = new ArrayList<>();
            try (PreparedStatement ps = c.prepareStatement(statements.deadEvents())) {
                ps.setString(1, consumer);
                ps.setInt(2, limit);
                try (ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) {
                        out.add(new DeadEvent(consumer, (UUID) rs.getObject(1), rs.getString(2), rs.getString(3),
                                rs.getInt(4), rs.getString(5), rs.getTimestamp(6).toInstant()));
                    }
                }
            }
            return out;
        });
    }

    @Override
    public boolean retryNow(String consumer, UUID eventId) {
        boolean changed = inTransaction("retrying inbox event " + eventId,
                c -> Jdbc.update(c, statements.retryNow(), consumer, eventId) == 1);
        log.info("txoutbox-inbox-admin: retry now of event {} for consumer {}: {}", eventId, consumer,
                changed ? "done" : "not parked or dead");
        return changed;
    }

    @Override
    public boolean skip(String consumer, UUID eventId) {
        boolean changed = inTransaction("skipping inbox event " + eventId,
                c -> Jdbc.update(c, statements.skip(), consumer, eventId) == 1);
        log.info("txoutbox-inbox-admin: skip of event {} for consumer {}: {}", eventId, consumer,
                changed ? "done" : "not parked");
        return changed;
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
