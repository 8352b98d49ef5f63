package io.txoutbox.testing.history;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicLong;

/**
 * One {@link LedgerWriter} transaction: locks its keys (sorted), inserts the ledger and outbox row of every event,
 * then commits or rolls back on purpose; retries serialization failures and deadlocks. Counts what it did.
 */
final class LedgerTransaction {

    private final LedgerWriterConfig config;
    private final String keySeqTable;
    private final String ledgerTable;
    final AtomicLong committedTransactions = new AtomicLong();
    final AtomicLong committedEvents = new AtomicLong();
    final AtomicLong rolledBackTransactions = new AtomicLong();
    final AtomicLong rolledBackEvents = new AtomicLong();
    final AtomicLong retries = new AtomicLong();
    final AtomicLong unknownOutcomes = new AtomicLong();
    final ConcurrentLinkedQueue<UUID> rolledBackIds = new ConcurrentLinkedQueue<>();

    LedgerTransaction(LedgerWriterConfig config) {
        this.config = config;
        String schema = Ledger.quote(config.schema());
        this.keySeqTable = schema + "." + Ledger.KEY_SEQ_TABLE;
        this.ledgerTable = schema + "." + Ledger.LEDGER_TABLE;
    }

    void run(Connection connection, int writer, List<String> keys, List<UUID> ids,
             boolean rollBack, long intendedStart) throws SQLException {
        for (int attempt = 1; ; attempt++) {
            long start = System.nanoTime();
            List<LedgerEntry> events;
            try {
                events = writeEvents(connection, writer, keys, ids);
                if (rollBack) {
                    connection.rollback();
                    rolledBackTransactions.incrementAndGet();
                    rolledBackEvents.addAndGet(events.size());
                    rolledBackIds.addAll(ids);
                    return;
                }
            } catch (SQLException e) {
                rollbackQuietly(connection);
                if (isRetryable(e) && attempt < config.maxAttempts()) {
                    retries.incrementAndGet();
                    continue;
                }
                throw e;
            } catch (RuntimeException e) {
                rollbackQuietly(connection);
                throw e;
            }
            try {
                connection.commit();
            } catch (SQLException e) {
                rollbackQuietly(connection);
                if (isRetryable(e) && attempt < config.maxAttempts()) {
                    retries.incrementAndGet(); // a serialization failure at commit means it did not commit
                    continue;
                }
                unknownOutcomes.incrementAndGet();
                throw e;
            }
            long committedNanos = System.nanoTime();
            Instant committedWall = Instant.now();
            committedTransactions.incrementAndGet();
            committedEvents.addAndGet(events.size());
            if (config.commitListener() != null) {
                config.commitListener().committed(new CommitListener.Commit(writer, events,
                        config.targetRate() > 0 ? intendedStart : start, start, committedNanos, committedWall));
            }
            return;
        }
    }

    /** Locks the keys (sorted), then inserts ledger row and outbox row per event; returns the events in order. */
    private List<LedgerEntry> writeEvents(Connection connection, int writer, List<String> keys, List<UUID> ids)
            throws SQLException {
        TreeMap<String, Integer> perKey = new TreeMap<>();
        keys.forEach(key -> perKey.merge(key, 1, Integer::sum));
        List<LedgerEntry> events = new ArrayList<>(ids.size());
        try (PreparedStatement lock = connection.prepareStatement(
                "UPDATE " + keySeqTable + " SET seq = seq + ? WHERE key = ? RETURNING seq");
             PreparedStatement insert = connection.prepareStatement(
                     "INSERT INTO " + ledgerTable + " (event_id, key, seq, writer) VALUES (?, ?, ?, ?)")) {
            int next = 0;
            for (var entry : perKey.entrySet()) {
                String key = entry.getKey();
                int count = entry.getValue();
                lock.setInt(1, count);
                lock.setString(2, key);
                long last;
                try (ResultSet row = lock.executeQuery()) {
                    if (!row.next()) {
                        throw new IllegalStateException("ledger key " + key + " has no row in " + keySeqTable);
                    }
                    last = row.getLong(1);
                }
                for (long seq = last - count + 1; seq <= last; seq++) {
                    events.add(new LedgerEntry(ids.get(next++), key, seq));
                }
            }
            for (LedgerEntry event : events) {
                insert.setObject(1, event.eventId());
                insert.setString(2, event.key());
                insert.setLong(3, event.seq());
                insert.setInt(4, writer);
                insert.executeUpdate();
                config.inserter().insert(connection, event.eventId(), event.key(), event.seq());
            }
        }
        return events;
    }

    static boolean isRetryable(Throwable error) {
        for (Throwable e = error; e != null; e = e.getCause()) {
            if (e instanceof SQLException sql) {
                for (SQLException next = sql; next != null; next = next.getNextException()) {
                    String state = next.getSQLState();
                    if ("40001".equals(state) || "40P01".equals(state)) {
                        return true;
                    }
                }
            }
        }
        return false;
    }

    private static void rollbackQuietly(Connection connection) {
        try {
            connection.rollback();
        } catch (SQLException ignored) {
            // the connection is checked before its next use
        }
    }
}
