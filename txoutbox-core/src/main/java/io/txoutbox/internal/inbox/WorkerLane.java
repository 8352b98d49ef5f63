package io.txoutbox.internal.inbox;

import io.txoutbox.FailurePolicy;
import io.txoutbox.InboxEvent;
import io.txoutbox.InboxHandler;
import io.txoutbox.InboxWorkerConfig;
import io.txoutbox.OutboxException;
import io.txoutbox.internal.BackendCheck;
import io.txoutbox.internal.lane.LaneLock;
import io.txoutbox.internal.LoggedKeys;
import io.txoutbox.internal.Privileges;
import io.txoutbox.internal.lane.SessionLease;
import io.txoutbox.internal.pg.AdvisoryLocks;
import io.txoutbox.internal.pg.InboxStatements;
import io.txoutbox.internal.pg.Jdbc;
import io.txoutbox.spi.InboxListener;
import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Savepoint;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One lane of an inbox worker: the inbox shards with {@code shard % lanes == index}, worked by one thread with one
 * connection that holds the lane's advisory lock for this consumer, so no two workers ever process one key at once.
 * One batch (one transaction, a savepoint per event) at a time.
 */
final class WorkerLane implements Runnable {

    private static final Logger log = LoggerFactory.getLogger(WorkerLane.class);
    private static final Duration STANDBY_RETRY = Duration.ofSeconds(1);
    private static final int MAX_ERROR_LENGTH = 2000;

    private final InboxWorkerConfig config;
    private final int index;
    private final String laneId;
    private final Integer[] shards;
    private final DataSource dataSource;
    private final InboxStatements statements;
    private final int consumerHash;
    private final InboxCounters counters;
    private final InboxListener listener;
    private final Semaphore wake = new Semaphore(0);
    /** Told when the lane meets "permission denied" (42501): the worker stops. */
    private final java.util.function.Consumer<Throwable> denied;
    private final HandlerWatchdog watchdog;
    /** A statement at least every third of the lease keeps an idle lane's session (idle_session_timeout). */
    private final long heartbeatNanos;
    private final long batchDeadlineNanos;
    private long lastTalkNanos;
    /**
     * An event whose handler ran past its budget and the lease, so the session (and the batch) was lost before its
     * failure could be recorded; recorded on the next session before the next claim, so it fails that event — and
     * after the retries parks its key — instead of failing its batch for ever.
     */
    private Failure overrun;

    private volatile boolean stopping;
    private Connection connection;
    /** The isolation level the connection had before the lane pinned READ COMMITTED. */
    private int isolation = Connection.TRANSACTION_READ_COMMITTED;
    private boolean owner;
    private long errorBackoffMs;
    private String standbyReason;
    private final BackendCheck backendCheck = new BackendCheck("inbox worker");

    WorkerLane(InboxWorkerConfig config, int index, DataSource dataSource, InboxStatements statements,
            InboxCounters counters,
            InboxListener listener, java.util.function.Consumer<Throwable> denied, HandlerWatchdog watchdog) {
        this.config = config;
        this.watchdog = watchdog;
        this.heartbeatNanos = config.leaseTimeout().toNanos() / 3;
        this.batchDeadlineNanos = InboxSession.batchDeadline(config).toNanos();
        this.denied = denied;
        this.index = index;
        this.laneId = config.name() + "-" + index;
        this.dataSource = dataSource;
        this.statements = statements;
        this.consumerHash = AdvisoryLocks.inboxConsumerHash(statements.schemaName(), config.consumer());
        this.counters = counters;
        this.listener = listener;
        List<Integer> mine = new ArrayList<>();
        for (int s = 0; s < InboxWorkerConfig.INBOX_SHARDS; s++) {
            if (s % config.lanes() == index) {
                mine.add(s);
            }
        }
        this.shards = mine.toArray(new Integer[0]);
    }

    String id() {
        return laneId;
    }

    void nudge() {
        if (wake.availablePermits() == 0) {
            wake.release();
        }
    }

    void stop() {
        stopping = true;
        wake.release();
    }

    @Override
    public void run() {
        log.info("txoutbox-inbox {}: lane started for consumer {}, shards {}", laneId, config.consumer(),
                Arrays.toString(shards));
        try {
            while (!stopping) {
                try {
                    if (!ensureOwnership()) {
                        pause(STANDBY_RETRY.toMillis());
                        continue;
                    }
                    boolean worked = runBatch();
                    lastTalkNanos = System.nanoTime();
                    errorBackoffMs = 0;
                    if (!worked) {
                        idle();
                    }
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    stopping = true;
                } catch (Throwable t) { // the loop never dies; it reconnects and goes on
                    counters.loopErrors.increment();
                    if (BackendCheck.isMismatch(t)) {
                        // configuration, not a fault: another cycle runs behind the same pooler
                        log.error("txoutbox-inbox {}: the lane stops: {}", laneId, BackendCheck.message(t));
                        releaseConnection();
                        stopping = true;
                        denied.accept(t);
                        continue;
                    }
                    if (Privileges.isDenied(t)) {
                        // not worth a retry: the next cycle meets the same missing grant (the worker says which)
                        log.error("txoutbox-inbox {}: permission denied, the lane stops: {}", laneId, t.toString());
                        releaseConnection();
                        stopping = true;
                        denied.accept(t);
                        continue;
                    }
                    listener.loopFailed(t);
                    log.error("txoutbox-inbox {}: batch failed, reconnecting (its rows stay pending): {}", laneId,
                            t.toString(), t);
                    releaseConnection();
                    errorBackoffMs = Math.min(5_000, Math.max(100, errorBackoffMs * 2));
                    pause(errorBackoffMs);
                }
            }
        } finally {
            releaseConnection();
            log.info("txoutbox-inbox {}: lane stopped", laneId);
        }
    }

    // ---- ownership -------------------------------------------------------------------------------------------

    private boolean ensureOwnership() throws SQLException {
        if (owner && connection != null) {
            return true;
        }
        if (connection == null) {
            connection = dataSource.getConnection();
            connection.setAutoCommit(true);
            // the lease, and READ COMMITTED like every txoutbox session; the handler's effects share the batch's
            // transaction, so they run at it too
            isolation = SessionLease.configure(connection, InboxSession.settings(config, laneId));
        }
        LaneLock.Result lock = LaneLock.tryAcquire(connection, AdvisoryLocks.inboxLane(consumerHash, index),
                AdvisoryLocks.inboxLaneCount(consumerHash, config.lanes()), config.lanes());
        if (lock.outcome() == LaneLock.Outcome.TAKEN) {
            standby("another worker of consumer " + config.consumer() + " owns this lane");
            releaseConnection();
            return false;
        }
        if (lock.outcome() == LaneLock.Outcome.LANE_COUNT_CONFLICT) {
            log.error("txoutbox-inbox {}: another worker of consumer {} runs with lanes={} but this one has lanes={}:"
                    + " lanes would overlap and break per-key order, so this lane waits. Give every worker of a"
                    + " consumer the same lanes.", laneId, config.consumer(), lock.otherLaneCounts(), config.lanes());
            releaseConnection();
            return false;
        }
        backendCheck.acquired(connection, AdvisoryLocks.inboxLane(consumerHash, index).single());
        owner = true;
        standbyReason = null;
        counters.lanesOwned.incrementAndGet();
        log.info("txoutbox-inbox {}: owns the lane now", laneId);
        connection.setAutoCommit(false);
        return true;
    }

    private void standby(String reason) {
        if (!reason.equals(standbyReason)) {
            log.info("txoutbox-inbox {}: standing by: {}", laneId, reason);
            standbyReason = reason;
        }
    }

    private void releaseConnection() {
        Connection c = connection;
        connection = null;
        if (owner) {
            owner = false;
            counters.lanesOwned.decrementAndGet();
        }
        if (c == null) {
            return;
        }
        try {
            SessionLease.reset(c, isolation);
        } catch (SQLException e) {
            log.debug("txoutbox-inbox {}: could not reset connection: {}", laneId, e.toString());
        } finally {
            try {
                c.close();
            } catch (SQLException ignored) {
                // closing a broken connection
            }
        }
    }

    // ---- one batch -------------------------------------------------------------------------------------------

    private record Failure(InboxEvent event, Throwable cause, boolean permanent) {
    }

    /** A claimed batch; {@code ageMicros[i]}: event i's age at the claim, from its received_at (database clock). */
    private record Claimed(List<InboxEvent> events, long[] ageMicros) {
    }

    /** Claims and handles one batch in one transaction; false when there was nothing to do. */
    private boolean runBatch() throws SQLException {
        Connection c = connection;
        try {
            if (overrun != null) {
                recordOverrun(c);
            }
            long t0 = System.nanoTime();
            Claimed claimed = claim(c, waitingKeys(c));
            List<InboxEvent> batch = claimed.events();
            if (batch.isEmpty()) {
                c.commit();
                return false;
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
            return true;
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
        boolean permanent = f.permanent;
        String error = HandlerFailures.describe(f.cause, 500);
        if (!permanent && attempts < config.retry().maxAttempts()) {
            long delay = config.retry().backoffAfter(attempts).toMillis();
            log.warn("txoutbox-inbox {}: event {} (key {}) failed, attempt {} of {}, retry in {} ms: {}", laneId,
                    e.eventId(), key(e.key()), attempts, config.retry().maxAttempts(), delay, error);
            delays.add(delay);
            return "PENDING";
        }
        delays.add(0L);
        String why = permanent ? "failed permanently" : "failed " + attempts + " times";
        if (config.failurePolicy() == FailurePolicy.PARK_KEY) {
            log.error("txoutbox-inbox {}: event {} {}; key {} of consumer {} is parked until an operator releases "
                    + "it: {}", laneId, e.eventId(), why, key(e.key()), config.consumer(), error);
            return "PARKED";
        }
        log.error("txoutbox-inbox {}: event {} {}; dead, key {} of consumer {} moves on: {}", laneId, e.eventId(),
                why, key(e.key()), config.consumer(), error);
        return "DEAD";
    }

    /**
     * Nothing to do: waits for a nudge or the poll interval, and keeps the lease meanwhile (a statement every third
     * of it, committed at once so the session never idles in a transaction).
     */
    private void idle() throws InterruptedException {
        long deadline = System.nanoTime() + config.pollInterval().toNanos();
        while (!stopping) {
            long left = deadline - System.nanoTime();
            if (left <= 0 || wake.tryAcquire(Math.min(left, heartbeatNanos), TimeUnit.NANOSECONDS)) {
                return;
            }
            if (owner && connection != null && System.nanoTime() - lastTalkNanos >= heartbeatNanos) {
                try (Statement st = connection.createStatement()) {
                    st.execute(statements.heartbeat());
                    connection.commit();
                    lastTalkNanos = System.nanoTime();
                } catch (SQLException e) {
                    log.warn("txoutbox-inbox {}: lost the lane's session while idle ({}); another worker may own it"
                            + " now", laneId, e.getMessage());
                    releaseConnection();
                    return;
                }
            }
        }
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

    private void pause(long ms) {
        try {
            long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(ms);
            while (!stopping) {
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    return;
                }
                wake.tryAcquire(left, TimeUnit.NANOSECONDS);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            stopping = true;
        }
    }
}
