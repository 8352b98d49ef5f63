package io.txoutbox.internal.inbox;

import io.txoutbox.InboxEvent;
import io.txoutbox.InboxHandler;
import io.txoutbox.InboxWorkerConfig;
import io.txoutbox.OutboxException;
import io.txoutbox.internal.BackendCheck;
import io.txoutbox.internal.FailureRule;
import io.txoutbox.internal.LoggedKeys;
import io.txoutbox.internal.lane.LeaseKeeper;
import io.txoutbox.internal.lane.Outcome;
import io.txoutbox.internal.pg.InboxStatements;
import io.txoutbox.internal.pg.Jdbc;
import io.txoutbox.spi.InboxListener;
import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Savepoint;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One batch of an inbox lane, in one transaction on the lane's session: claim (the keys that wait excluded from
 * their waiting event on), each event's handler under a savepoint and its own time budget ({@link HandlerWatchdog}),
 * processed rows marked and failures recorded per key, then commit. A key waits from its failed event on.
 */
final class InboxBatch {

    private static final Logger log = LoggerFactory.getLogger(InboxBatch.class);
    private static final int MAX_ERROR_LENGTH = 2000;

    private final InboxWorkerConfig config;
    private final String laneId;
    private final Integer[] shards;
    private final InboxStatements statements;
    private final InboxCounters counters;
    private final InboxListener listener;
    private final HandlerWatchdog watchdog;
    /** Proves in the mark's WHERE that it runs on the session holding the lane's lock. */
    private final BackendCheck backendCheck;
    private final LeaseKeeper keeper;
    private final long batchDeadlineNanos;
    /**
     * An event whose handler ran past its budget and the lease, so the session (and the batch) was lost before its
     * failure could be recorded; recorded on the next session before the next claim, so it fails that event — and
     * after the retries parks its key — instead of failing its batch for ever.
     */
    private Failure overrun;

    InboxBatch(InboxWorkerConfig config, String laneId, Integer[] shards, InboxStatements statements,
            InboxCounters counters, InboxListener listener, HandlerWatchdog watchdog, BackendCheck backendCheck,
            LeaseKeeper keeper) {
        this.config = config;
        this.laneId = laneId;
        this.shards = shards;
        this.statements = statements;
        this.counters = counters;
        this.listener = listener;
        this.watchdog = watchdog;
        this.backendCheck = backendCheck;
        this.keeper = keeper;
        this.batchDeadlineNanos = InboxSession.batchDeadline(config).toNanos();
    }

    private record Failure(InboxEvent event, Throwable cause, boolean permanent) {
    }

    /** A claimed batch; {@code ageMicros[i]}: event i's age at the claim, from its received_at (database clock). */
    private record Claimed(List<InboxEvent> events, long[] ageMicros) {
    }

    /** Claims and handles one batch in one transaction on the lane's session {@code c}. */
    Outcome run(Connection c) throws SQLException {
        try {
            if (overrun != null) {
                recordOverrun(c);
            }
            long t0 = System.nanoTime();
            Claimed claimed = claim(c, waitingKeys(c));
            List<InboxEvent> batch = claimed.events();
            if (batch.isEmpty()) {
                c.commit();
                keeper.talked();
                return Outcome.IDLE;
            }
            long claimedAt = System.nanoTime();
            List<Long> processed = new ArrayList<>(batch.size());
            int[] processedIndex = new int[batch.size()];
            long[] handlerNanos = new long[batch.size()];
            List<Failure> failures = new ArrayList<>();
            Set<String> failedKeys = new HashSet<>();
            for (int i = 0; i < batch.size(); i++) {
                if (i > 0 && System.nanoTime() - claimedAt > batchDeadlineNanos) {
                    break; // the batch has run for the lease: the rest stays pending, in order, for the next one
                }
                InboxEvent e = batch.get(i);
                String group = InboxBytes.groupForm(e.keyBytes()); // the key as partition_key groups it
                if (group != null && failedKeys.contains(group)) {
                    continue; // the key waits from its failed event on; stays pending, in order
                }
                long h0 = System.nanoTime();
                Throwable failure = handle(c, e);
                handlerNanos[i] = System.nanoTime() - h0;
                if (failure == null) {
                    processedIndex[processed.size()] = i;
                    processed.add(e.id());
                } else {
                    failures.add(new Failure(e, failure, config.permanentFailure().test(failure)));
                    if (group != null) {
                        failedKeys.add(group);
                    }
                }
            }
            long handledAt = System.nanoTime();
            if (!processed.isEmpty()) {
                try (PreparedStatement ps = c.prepareStatement(backendCheck.guard(statements.markProcessed()))) {
                    ps.setString(1, config.consumer());
                    ps.setArray(2, c.createArrayOf("bigint", processed.toArray(new Long[0])));
                    int marked = ps.executeUpdate();
                    if (marked != processed.size()) {
                        // An operator changed a row meanwhile; its handler's effects must not commit without it.
                        throw new IllegalStateException("marked " + marked + " of " + processed.size()
                                + " processed rows: rows changed under the lane; the batch is rolled back");
                    }
                }
            }
            long parked = 0;
            long dead = 0;
            List<String> states = new ArrayList<>(failures.size());
            if (!failures.isEmpty()) {
                List<Long> ids = new ArrayList<>();
                List<String> errors = new ArrayList<>();
                List<Long> delays = new ArrayList<>();
                for (Failure f : failures) {
                    String state = plan(f, delays);
                    ids.add(f.event.id());
                    errors.add(HandlerFailures.describe(f.cause, MAX_ERROR_LENGTH));
                    states.add(state);
                    parked += state.equals("PARKED") ? 1 : 0;
                    dead += state.equals("DEAD") ? 1 : 0;
                }
                try (PreparedStatement ps = c.prepareStatement(backendCheck.guard(statements.recordFailures()))) {
                    ps.setArray(1, c.createArrayOf("bigint", ids.toArray(new Long[0])));
                    ps.setArray(2, c.createArrayOf("text", errors.toArray(new String[0])));
                    ps.setArray(3, c.createArrayOf("bigint", delays.toArray(new Long[0])));
                    ps.setArray(4, c.createArrayOf("text", states.toArray(new String[0])));
                    ps.setString(5, config.consumer());
                    ps.executeUpdate();
                }
            }
            c.commit();
            keeper.talked();
            long done = System.nanoTime();
            counters.batches.increment();
            counters.processed.add(processed.size());
            counters.failedAttempts.add(failures.size());
            counters.parked.add(parked);
            counters.dead.add(dead);
            listener.batchCompleted(batch.size(), claimedAt - t0, handledAt - claimedAt, done - handledAt);
            for (int p = 0; p < processed.size(); p++) {
                int i = processedIndex[p];
                listener.processed(batch.get(i).eventType(), handlerNanos[i],
                        claimed.ageMicros()[i] * 1_000 + (done - claimedAt));
            }
            for (int f = 0; f < failures.size(); f++) {
                Failure failure = failures.get(f);
                String type = failure.event().eventType();
                listener.handlerFailed(type, failure.permanent() ? InboxListener.FailureKind.PERMANENT
                        : InboxListener.FailureKind.TRANSIENT);
                switch (states.get(f)) {
                    case "PARKED" -> listener.keyParked(type);
                    case "DEAD" -> listener.deadLettered(type);
                    default -> {
                        // retried later; nothing more to report
                    }
                }
            }
            return Outcome.WORKED;
        } catch (SQLException | RuntimeException e) {
            Jdbc.rollbackQuietly(c);
            throw e;
        }
    }

    /** Runs the event's handler under a savepoint; returns its failure, or null. */
    private Throwable handle(Connection c, InboxEvent e) throws SQLException {
        InboxHandler handler = config.handlers().get(e.eventType());
        if (handler == null) {
            handler = config.defaultHandler();
        }
        if (handler == null) {
            return new OutboxException("no handler for event type '" + e.eventType() + "' in inbox worker "
                    + config.name() + " (consumer " + config.consumer() + "); register one with handler(type, ...)"
                    + " or defaultHandler(...)");
        }
        Savepoint sp = c.setSavepoint();
        long start = System.nanoTime();
        HandlerWatchdog.Ticket budget = watchdog.arm(config.handlerTimeout());
        Throwable failure = null;
        try {
            handler.handle(c, e);
        } catch (Throwable t) {
            failure = t;
        }
        boolean interrupted = budget.disarm();
        long elapsed = System.nanoTime() - start;
        boolean overran = interrupted || elapsed > config.handlerTimeout().toNanos();
        if (overran) {
            // slower than its budget: the event fails, whatever the handler made of the interrupt or the timeout
            failure = HandlerBudget.exceeded(config, e, elapsed, failure);
        } else if (failure instanceof InterruptedException) {
            Thread.currentThread().interrupt(); // not the budget's: the worker is being closed
        }
        if (failure != null) {
            try {
                c.rollback(sp); // throws if the connection is gone: then the whole batch is retried
            } catch (SQLException lost) {
                if (overran) {
                    overrun = new Failure(e, failure, false); // counted on the next session
                }
                throw lost;
            }
            return failure;
        }
        c.releaseSavepoint(sp);
        if (!isInTransaction(c)) {
            throw new IllegalStateException("the handler for event type '" + e.eventType() + "' committed or changed"
                    + " the auto-commit mode of the worker's connection; handlers must not");
        }
        return null;
    }

    private static boolean isInTransaction(Connection c) throws SQLException {
        return !c.getAutoCommit();
    }

    /** A partition key as this worker's log lines show it (see {@link InboxWorkerConfig#logPartitionKeys()}). */
    private String key(String key) {
        return LoggedKeys.show(key, config.logPartitionKeys());
    }

    /** Records the failed attempt of {@link #overrun} in a transaction of its own; a row no longer pending is left. */
    private void recordOverrun(Connection c) throws SQLException {
        Failure f = overrun;
        List<Long> delays = new ArrayList<>(1);
        String state = plan(f, delays);
        int updated;
        try (PreparedStatement ps = c.prepareStatement(statements.recordFailures())) {
            ps.setArray(1, c.createArrayOf("bigint", new Long[] {f.event().id()}));
            ps.setArray(2, c.createArrayOf("text", new String[] {HandlerFailures.describe(f.cause(),
                    MAX_ERROR_LENGTH)}));
            ps.setArray(3, c.createArrayOf("bigint", delays.toArray(new Long[0])));
            ps.setArray(4, c.createArrayOf("text", new String[] {state}));
            ps.setString(5, config.consumer());
            updated = ps.executeUpdate();
        }
        c.commit();
        keeper.talked();
        overrun = null;
        if (updated == 1) {
            String type = f.event().eventType();
            counters.failedAttempts.increment();
            listener.handlerFailed(type, InboxListener.FailureKind.TRANSIENT);
            if (state.equals("PARKED")) {
                counters.parked.increment();
                listener.keyParked(type);
            } else if (state.equals("DEAD")) {
                counters.dead.increment();
                listener.deadLettered(type);
            }
        }
    }

    /** Decides the failed event's next state and appends its delay (ms) to {@code delays}. */
    private String plan(Failure f, List<Long> delays) {
        InboxEvent e = f.event;
        int attempts = e.attempts() + 1;
        FailureRule rule = FailureRule.after(attempts, f.permanent, config.retry(), config.failurePolicy());
        long delay = rule.delayMs(attempts, config.retry());
        delays.add(delay);
        String error = HandlerFailures.describe(f.cause, 500);
        String why = FailureRule.why(attempts, f.permanent);
        switch (rule) {
            case RETRY -> log.warn("txoutbox-inbox {}: event {} (key {}) failed, attempt {} of {}, retry in {} ms: {}",
                    laneId, e.eventId(), key(e.key()), attempts, config.retry().maxAttempts(), delay, error);
            case PARK -> log.error("txoutbox-inbox {}: event {} {}; key {} of consumer {} is parked until an operator "
                    + "releases it: {}", laneId, e.eventId(), why, key(e.key()), config.consumer(), error);
            case DEAD -> log.error("txoutbox-inbox {}: event {} {}; dead, key {} of consumer {} moves on: {}", laneId,
                    e.eventId(), why, key(e.key()), config.consumer(), error);
        }
        return rule.state();
    }

    private Map<String, Long> waitingKeys(Connection c) throws SQLException {
        Map<String, Long> keys = new HashMap<>();
        try (PreparedStatement ps = c.prepareStatement(statements.waitingKeys())) {
            ps.setString(1, config.consumer());
            ps.setArray(2, c.createArrayOf("integer", shards));
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    keys.put(rs.getString(1), rs.getLong(2));
                }
            }
        }
        return keys;
    }

    private Claimed claim(Connection c, Map<String, Long> waiting) throws SQLException {
        String[] keys = new String[waiting.size()];
        Long[] fromIds = new Long[waiting.size()];
        int w = 0;
        for (Map.Entry<String, Long> e : waiting.entrySet()) {
            keys[w] = e.getKey();
            fromIds[w++] = e.getValue();
        }
        List<InboxEvent> batch = new ArrayList<>(config.batchSize());
        long[] ageMicros = new long[config.batchSize()];
        try (PreparedStatement ps = c.prepareStatement(statements.claim())) {
            ps.setString(1, config.consumer());
            ps.setArray(2, c.createArrayOf("integer", shards));
            ps.setArray(3, c.createArrayOf("text", keys));
            ps.setArray(4, c.createArrayOf("bigint", fromIds));
            ps.setInt(5, config.batchSize());
            ps.setFetchSize(config.batchSize());
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    ageMicros[batch.size()] = rs.getLong(16);
                    long version = rs.getLong(7);
                    Long aggregateVersion = rs.wasNull() ? null : version;
                    int partition = rs.getInt(12);
                    Integer sourcePartition = rs.wasNull() ? null : partition;
                    long offset = rs.getLong(13);
                    Long sourceOffset = rs.wasNull() ? null : offset;
                    // key_bytes is NULL only for a row stored before V6 and not yet backfilled (or by an older
                    // receiver): partition_key was the key's text then
                    byte[] keyBytes = rs.getBytes(17);
                    String partitionKey = rs.getString(3);
                    if (keyBytes == null && partitionKey != null) {
                        keyBytes = InboxBytes.utf8(partitionKey);
                    }
                    Map<String, String> headers = headers(rs.getArray(9), rs.getArray(10));
                    byte[] headerBytes = rs.getBytes(18);
                    UUID eventId = (UUID) rs.getObject(2);
                    batch.add(new InboxEvent(rs.getLong(1), config.consumer(), eventId,
                            InboxBytes.textForm(keyBytes), rs.getString(4), rs.getString(5), rs.getString(6),
                            aggregateVersion, rs.getBytes(8), headers, rs.getString(11), sourcePartition,
                            sourceOffset, rs.getTimestamp(14).toInstant(), rs.getInt(15), keyBytes,
                            headerBytes(eventId, headerBytes, headers)));
                }
            }
        }
        return new Claimed(batch, ageMicros);
    }

    /** The exact header values; a {@code header_bytes} this version cannot read must not stop the lane. */
    private Map<String, byte[]> headerBytes(UUID eventId, byte[] encoded, Map<String, String> headers) {
        if (encoded == null) {
            return InboxBytes.bytesOf(headers);
        }
        try {
            return InboxBytes.decodeHeaders(encoded);
        } catch (RuntimeException e) {
            log.warn("txoutbox-inbox {}: event {}: header_bytes unreadable ({}); the handler gets the headers' UTF-8 "
                    + "text forms instead", laneId, eventId, e.toString());
            return InboxBytes.bytesOf(headers);
        }
    }

    private static Map<String, String> headers(Array names, Array values) throws SQLException {
        String[] n = (String[]) names.getArray();
        String[] v = (String[]) values.getArray();
        if (n.length == 0) {
            return Map.of();
        }
        Map<String, String> map = new LinkedHashMap<>();
        for (int i = 0; i < n.length; i++) {
            map.put(n[i], v[i]);
        }
        return java.util.Collections.unmodifiableMap(map);
    }
}
