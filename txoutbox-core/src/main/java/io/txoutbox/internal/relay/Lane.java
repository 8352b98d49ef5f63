package io.txoutbox.internal.relay;

import io.txoutbox.RelayConfig;
import io.txoutbox.internal.BackendCheck;
import io.txoutbox.internal.LaneLock;
import io.txoutbox.internal.Privileges;
import io.txoutbox.internal.TestHooks;
import io.txoutbox.internal.pg.AdvisoryLocks;
import io.txoutbox.internal.pg.Jdbc;
import io.txoutbox.internal.pg.PgErrors;
import io.txoutbox.internal.pg.RelayStatements;
import io.txoutbox.spi.OutboxRecord;
import io.txoutbox.spi.RelayListener;
import io.txoutbox.spi.SendResult;
import io.txoutbox.spi.Transport;
import io.txoutbox.spi.TransportLane;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One lane of the polling relay: a fixed share of the shards ({@code shard % lanes == index}), worked by one thread
 * with one connection that holds the lane's advisory lock. One batch in flight at a time.
 */
final class Lane implements Runnable {

    private static final Logger log = LoggerFactory.getLogger(Lane.class);
    private static final Duration STANDBY_RETRY = Duration.ofSeconds(1);
    private static final long NUDGE_WINDOW_NANOS = TimeUnit.MILLISECONDS.toNanos(200);
    private static final AtomicBoolean TOLD_NO_COMMIT_TIMESTAMPS = new AtomicBoolean();

    private final RelayConfig config;
    private final int index;
    private final String laneId;
    private final Integer[] shards;
    /** The lane's advisory lock key (one bigint). */
    private final long laneKey;
    private final DataSource dataSource;
    private final Transport transport;
    private final RelayStatements statements;
    private final RelayCounters counters;
    private final RelayListener listener;
    private final Governor governor;
    private final Semaphore wake = new Semaphore(0);
    private final long heartbeatNanos;

    private volatile boolean stopping;
    private volatile long nudgedAt = System.nanoTime() - NUDGE_WINDOW_NANOS * 2;
    private Connection connection;
    /** The isolation level the connection had before the lane pinned READ COMMITTED. */
    private int isolation = Connection.TRANSACTION_READ_COMMITTED;
    private volatile boolean owner;
    private CompletableFuture<List<SendResult>> unfinished;
    private long outageBackoffMs;
    private long errorBackoffMs;
    private String standbyReason;
    private volatile long ownedSinceMillis;
    private volatile long lastBatchMillis;
    private volatile int lastBatchSize;
    private volatile long lastLoopMillis;
    /** Per event of the batch in flight: how long before its claim its commit→ack latency started (µs). */
    private final long[] claimAgeMicros;
    private long claimedAtNanos;
    private boolean commitTimestamps;
    private final ClaimFloor claimFloor;
    private final BackendCheck backendCheck = new BackendCheck("relay");
    private long firstWaiting = -1;
    /** Keeps the session alive while the lane waits outside the database (the transport, listeners). */
    private final LeaseKeeper keeper;
    private final MarkRetries markRetries;
    private final FailurePlanner planner;
    /** The lane as the transport sees it (the outbox's installation id), read each time the lane is taken. */
    private TransportLane transportLane;
    private final FencingGuard fencing = new FencingGuard();
    /** Set when another outbox uses this lane's fencing id: the lane keeps its lock and sends nothing. */
    private volatile io.txoutbox.OutboxException conflict;
    /** Counted down once the lane's first try to own its lane ended, and its transport is ready if it owns it. */
    private final java.util.concurrent.CountDownLatch ready = new java.util.concurrent.CountDownLatch(1);
    private CompletableFuture<Void> preparing = CompletableFuture.completedFuture(null);

    /** What the relay instance decides for its lanes: how many it may own, and which to hand over. */
    interface Governor {
        /** Reserves one of this instance's fair share of lanes; false when it owns its share already. */
        boolean tryReserve();

        void unreserve();

        /** True when this instance owns more than its share and this lane is one to hand over. */
        boolean mustRelease(int laneIndex);

        String instanceId();

        /**
         * The lane met "permission denied" (SQLState 42501), or found itself behind a transaction-mode pooler
         * ({@link BackendCheck}): retrying cannot help, the relay stops.
         */
        void denied(Throwable cause);

        /** The lane stopped: another outbox uses its fencing id ({@link FencingGuard}); the relay reports it. */
        void fencingConflict(io.txoutbox.OutboxException conflict);
    }

    Lane(RelayConfig config, int index, DataSource dataSource, Transport transport, RelayStatements statements,
            RelayCounters counters, RelayListener listener, Governor governor) {
        this.config = config;
        this.listener = listener;
        this.claimAgeMicros = new long[config.batchSize()];
        this.governor = governor;
        this.heartbeatNanos = config.leaseTimeout().toNanos() / 3;
        this.index = index;
        this.laneId = config.name() + "-" + index;
        this.laneKey = AdvisoryLocks.relayLane(config.schema(), index).single();
        this.dataSource = dataSource;
        this.transport = transport;
        this.statements = statements;
        this.counters = counters;
        List<Integer> mine = new ArrayList<>();
        for (int s = 0; s < config.schema().shards(); s++) {
            if (s % config.lanes() == index) {
                mine.add(s);
            }
        }
        this.shards = mine.toArray(new Integer[0]);
        this.claimFloor = new ClaimFloor(config.schema().qualifiedOutboxTable());
        this.keeper = new LeaseKeeper(laneId, heartbeatNanos, config.sendTimeout().toNanos());
        this.markRetries = new MarkRetries(laneId, counters.markRetries);
        this.planner = FailurePlanner.of(config, laneId);
    }

    String id() {
        return laneId;
    }

    int index() {
        return index;
    }

    boolean isOwner() {
        return owner;
    }

    long ownedSinceMillis() {
        return owner ? ownedSinceMillis : 0L;
    }

    long lastBatchMillis() {
        return lastBatchMillis;
    }

    int lastBatchSize() {
        return lastBatchSize;
    }

    /** When the lane last went once round its loop (a batch, an empty claim, a pause), or 0: never. */
    long lastLoopMillis() {
        return lastLoopMillis;
    }

    private void talked() {
        keeper.talked();
    }

    /**
     * Keeps the lease while the lane waits (for the broker, or for work): a statement at least every third of the
     * lease. Returns false — and lets the lane go — when the session is gone: the lease was lost.
     */
    private boolean heartbeat() {
        if (!owner || connection == null || keeper.beatIfDue(connection)) {
            return true;
        }
        log.warn("txoutbox-relay {}: lost the lane's session while waiting ({}); another instance may own it "
                + "now", laneId, keeper.lostReason());
        dropConnection();
        return false;
    }

    /**
     * The session ended while the lane waited outside the database: the lane is no longer the owner. It marks
     * nothing (the mark would be fenced) and sends nothing more on this session; the lane's next owner sends the
     * batch's events again — duplicates bounded by the batch in flight.
     */
    private Outcome leaseLost(LeaseKeeper.LeaseLostException e, int inFlight) {
        counters.fencedMarks.increment();
        markRetries.ended();
        log.warn("txoutbox-relay {}: {}; the lane marks nothing and sends nothing more on this session, and its "
                + "next owner sends the {} events of the batch in flight again", laneId, e.getMessage(), inFlight);
        dropConnection();
        listener.loopFailed(e); // as a mark refused after a lost lease always was
        return Outcome.LEASE_LOST;
    }

    void nudge() {
        nudgedAt = System.nanoTime();
        if (wake.availablePermits() == 0) {
            wake.release();
        }
    }

    void stop() {
        stopping = true;
        wake.release();
        ready.countDown();
    }

    /** After the first try to own the lane: ready at once when it stands by, else once its transport is ready. */
    private void signalReady() {
        if (ready.getCount() > 0) {
            preparing.whenComplete((v, e) -> ready.countDown());
        }
    }

    /**
     * Waits until the lane's first try to own its lane ended and, if it owns it, the transport is ready to send
     * ({@link Transport#prepare}); false when {@code nanos} passed first.
     */
    boolean awaitReady(long nanos) throws InterruptedException {
        return ready.await(nanos, TimeUnit.NANOSECONDS);
    }

    @Override
    public void run() {
        log.info("txoutbox-relay {}: lane started for shards {}", laneId, java.util.Arrays.toString(shards));
        try {
            while (!stopping) {
                try {
                    boolean owns = ensureOwnership();
                    signalReady();
                    if (!owns) {
                        pause(STANDBY_RETRY.toMillis());
                        continue;
                    }
                    if (conflict != null) { // holds the lane, so no instance of this outbox fences the other
                        pause(STANDBY_RETRY.toMillis());
                        continue;
                    }
                    if (governor.mustRelease(index)) {
                        log.info("txoutbox-relay {}: handing the lane over: this instance owns more than its "
                                + "fair share", laneId);
                        releaseConnection();
                        pause(STANDBY_RETRY.toMillis());
                        continue;
                    }
                    Outcome outcome = runBatch();
                    lastLoopMillis = System.currentTimeMillis();
                    errorBackoffMs = 0;
                    switch (outcome) {
                        case IDLE -> idle();
                        case OUTAGE -> pause(nextOutageBackoff());
                        case WORKED -> outageBackoffMs = 0;
                        case LEASE_LOST -> { } // the next cycle finds out who owns the lane now
                    }
                } catch (Throwable t) { // the loop never dies; it reconnects and goes on
                    ready.countDown();
                    counters.loopErrors.increment();
                    if (BackendCheck.isMismatch(t)) {
                        // configuration, not a fault: another cycle runs behind the same pooler
                        log.error("txoutbox-relay {}: the lane stops: {}", laneId, BackendCheck.message(t));
                        dropConnection();
                        stopping = true;
                        governor.denied(t);
                        continue;
                    }
                    if (Privileges.isDenied(t)) {
                        // not worth a retry: the next cycle meets the same missing grant (the relay says which)
                        log.error("txoutbox-relay {}: permission denied, the lane stops: {}", laneId, t.toString());
                        dropConnection();
                        stopping = true;
                        governor.denied(t);
                        continue;
                    }
                    listener.loopFailed(t);
                    log.error("txoutbox-relay {}: batch failed, reconnecting: {}", laneId, t.toString(), t);
                    dropConnection();
                    errorBackoffMs = Math.min(5_000, Math.max(100, errorBackoffMs * 2));
                    pause(errorBackoffMs);
                }
            }
        } finally {
            try {
                awaitUnfinishedSend(Duration.ofSeconds(5));
            } catch (RuntimeException | LeaseKeeper.LeaseLostException e) {
                log.warn("txoutbox-relay {}: stopping with a batch still unresolved by the transport", laneId);
            }
            dropConnection();
            keeper.close();
            log.info("txoutbox-relay {}: lane stopped", laneId);
        }
    }

    private enum Outcome { IDLE, WORKED, OUTAGE, LEASE_LOST }

    // ---- ownership -------------------------------------------------------------------------------------------

    private boolean ensureOwnership() throws SQLException {
        if (owner && connection != null) {
            return true;
        }
        if (!governor.tryReserve()) {
            standby("this instance owns its fair share of lanes");
            return false;
        }
        boolean reserved = true;
        try {
            if (connection == null) {
                connection = dataSource.getConnection();
                connection.setAutoCommit(true);
                isolation = LaneSession.configure(connection, config, laneId + " " + governor.instanceId());
            }
            LaneLock.Result lock = LaneLock.tryAcquire(connection, AdvisoryLocks.relayLane(config.schema(), index),
                    AdvisoryLocks.relayLaneCount(config.schema(), config.lanes()), config.lanes());
            if (lock.outcome() == LaneLock.Outcome.TAKEN) {
                standby("another relay instance owns this lane");
                releaseConnection(); // a standby holds no connection between tries
                return false;
            }
            if (lock.outcome() == LaneLock.Outcome.LANE_COUNT_CONFLICT) {
                log.error("txoutbox-relay {}: another relay instance works {} with relay.lanes={} but this one has "
                        + "relay.lanes={}: lanes would overlap and break per-key order, so this lane waits. Give "
                        + "every instance the same relay.lanes.", laneId, config.schema(), lock.otherLaneCounts(),
                        config.lanes());
                releaseConnection();
                return false;
            }
            backendCheck.acquired(connection, laneKey); // not behind a pooler
            transportLane = Installation.read(connection, statements).lane(laneId, index, governor.instanceId());
            commitTimestamps = tracksCommitTimestamps(connection);
            owner = true;
            lastLoopMillis = System.currentTimeMillis();
            claimFloor.reset(); // another instance may have owned the lane meanwhile
            fencing.reset();
            reserved = false; // the reservation is the ownership now
            standbyReason = null;
            ownedSinceMillis = System.currentTimeMillis();
            log.info("txoutbox-relay {}: owns the lane now ({})", laneId, governor.instanceId());
            try {
                // the producer is made now, not on the first event
                preparing = transport.prepare(transportLane).toCompletableFuture();
            } catch (RuntimeException e) {
                log.debug("txoutbox-relay {}: transport.prepare failed: {}", laneId, e.toString());
                preparing = CompletableFuture.completedFuture(null);
            }
            connection.setAutoCommit(false);
            talked();
            return true;
        } finally {
            if (reserved) {
                governor.unreserve();
            }
        }
    }

    /** Whether the server records commit timestamps (a server setting: it changes only with a restart). */
    private boolean tracksCommitTimestamps(Connection c) throws SQLException {
        boolean on = "on".equals(Jdbc.queryString(c, RelayStatements.TRACK_COMMIT_TIMESTAMP));
        if (!on && TOLD_NO_COMMIT_TIMESTAMPS.compareAndSet(false, true)) {
            log.info("txoutbox-relay {}: track_commit_timestamp is off, so commit→ack latency counts from the "
                    + "relay's claim of each event (turn it on in postgresql.conf to measure from the commit)",
                    laneId);
        }
        return on;
    }

    private void standby(String reason) {
        if (!reason.equals(standbyReason)) {
            log.info("txoutbox-relay {}: standing by: {}", laneId, reason);
            standbyReason = reason;
        }
    }

    private void releaseConnection() {
        Connection c = connection;
        connection = null;
        claimFloor.reset();
        keeper.reset(); // what a lost session said ends with it
        if (owner) {
            owner = false;
            governor.unreserve();
        }
        if (c == null) {
            return;
        }
        try {
            LaneSession.reset(c, isolation);
        } catch (SQLException e) {
            log.debug("txoutbox-relay {}: could not reset connection: {}", laneId, e.toString());
        } finally {
            try {
                c.close();
            } catch (SQLException ignored) {
                // closing a broken connection
            }
        }
    }

    private void dropConnection() {
        releaseConnection();
    }

    // ---- one batch -------------------------------------------------------------------------------------------

    private Outcome runBatch() throws Exception {
        Connection c = connection;
        List<OutboxRecord> batch;
        long claimStart = System.nanoTime();
        try {
            long from = claimFloor.beforeClaim(c);
            firstWaiting(c);
            batch = claim(c, from);
            c.commit();
            claimFloor.afterClaim(batch.isEmpty() ? -1 : batch.get(0).id(), firstWaiting);
            talked();
        } catch (SQLException e) {
            Jdbc.rollbackQuietly(c);
            throw e;
        }
        if (batch.isEmpty()) {
            return Outcome.IDLE;
        }
        long claimNanos = System.nanoTime() - claimStart;
        TestHooks.hit(TestHooks.AFTER_CLAIM);
        Outcome outcome;
        long t0;
        long ackedAt;
        try {
            awaitUnfinishedSend(config.sendTimeout());
            keeper.ensureOwner(c, "before the send"); // a session lost since the claim sends nothing
            t0 = System.nanoTime();
            CompletableFuture<List<SendResult>> sending = keeper.away(c, () -> send(batch));
            TestHooks.hit(TestHooks.AFTER_SEND_BEFORE_ACK);
            List<SendResult> results = await(sending, batch);
            ackedAt = System.nanoTime();
            counters.batches.increment();
            if (results.stream().anyMatch(SendResult::isDelivered)) {
                TestHooks.hit(TestHooks.AFTER_ACK_BEFORE_MARK); // the window that matters: acknowledged, not marked
            }
            outcome = record(c, batch, results, ackedAt);
            io.txoutbox.OutboxException stop = fencing.check(c, laneKey, transportLane,
                    statements.installationTable(), results);
            if (stop != null && conflict == null) {
                conflict = stop;
                log.error("txoutbox-relay {}: {}", laneId, stop.getMessage());
                governor.fencingConflict(stop);
            }
        } catch (LeaseKeeper.LeaseLostException e) {
            return leaseLost(e, batch.size());
        }
        long done = System.nanoTime();
        long sendNanos = ackedAt - t0;
        keeper.awayRun(c, () -> listener.batchCompleted(batch.size(), claimNanos, sendNanos, done - ackedAt));
        if (keeper.isLost()) { // in a listener's callback, after the mark: nothing to send again
            log.warn("txoutbox-relay {}: lost the lane's session while its listener ran ({})", laneId,
                    keeper.lostReason());
            dropConnection();
        }
        if (log.isDebugEnabled()) {
            log.debug("txoutbox-relay {}: batch of {} handled in {} ms", laneId, batch.size(), (done - t0) / 1_000_000);
        }
        return outcome;
    }

    /**
     * Sets {@link #firstWaiting} to the lowest id of a backing-off row of the lane, keyed or not (-1: none): one short
     * read of a small index, whatever the number of parked keys ({@link RelayStatements#waiting}).
     */
    private void firstWaiting(Connection c) throws SQLException {
        firstWaiting = Jdbc.queryLong(c, statements.waiting(), c.createArrayOf("integer", shards)).orElse(-1);
    }

    private List<OutboxRecord> claim(Connection c, long from) throws SQLException {
        List<OutboxRecord> batch = new ArrayList<>(config.batchSize());
        try (PreparedStatement ps = c.prepareStatement(
                commitTimestamps ? statements.claimWithCommitTime() : statements.claim())) {
            java.sql.Array lane = c.createArrayOf("integer", shards);
            ps.setLong(1, from);
            ps.setArray(2, lane);
            ps.setArray(3, lane);
            ps.setInt(4, config.batchSize());
            // fetched in chunks (the connection is in a transaction), so a batch of large events can stop early
            ps.setFetchSize(Math.min(config.batchSize(), 250));
            long batchBytes = 0;
            try (ResultSet rs = ps.executeQuery()) {
                claimedAtNanos = System.nanoTime();
                while (batchBytes < config.maxBatchBytes() && rs.next()) {
                    claimAgeMicros[batch.size()] = rs.getLong(14);
                    OutboxRecord r = OutboxRows.record(rs);
                    batch.add(r);
                    batchBytes += r.valueSize();
                }
            }
        }
        return batch;
    }

    /** Hands the batch to the transport; a send call that throws counts as a failed send. */
    private CompletableFuture<List<SendResult>> send(List<OutboxRecord> batch) {
        try {
            return transport.send(transportLane, batch).toCompletableFuture();
        } catch (RuntimeException e) {
            return CompletableFuture.failedFuture(e);
        }
    }

    /**
     * Waits for the transport's verdict, keeping the lease; past the send timeout the batch counts as undelivered.
     * A session lost meanwhile ends the wait: the batch's outcome can no longer be recorded on this lease.
     */
    private List<SendResult> await(CompletableFuture<List<SendResult>> sending, List<OutboxRecord> batch)
            throws InterruptedException, LeaseKeeper.LeaseLostException {
        Throwable failure;
        try {
            List<SendResult> results;
            try {
                results = keeper.await(connection, sending, config.sendTimeout().toNanos());
            } catch (LeaseKeeper.LeaseLostException e) {
                if (!sending.isDone()) {
                    unfinished = sending; // one batch in flight per lane, across owners of this instance too
                }
                throw e;
            }
            if (results != null && results.size() == batch.size()) {
                return results;
            }
            failure = new IllegalStateException("transport returned " + (results == null ? "null" : results.size())
                    + " results for a batch of " + batch.size());
        } catch (TimeoutException e) {
            unfinished = sending; // one batch in flight per lane: the next send waits for this one to end
            failure = new TimeoutException("no acknowledgement within relay.sendTimeout " + config.sendTimeout());
        } catch (ExecutionException e) {
            failure = e.getCause();
        }
        // A transport that cannot say what happened is treated as unreachable: back off, park nothing.
        List<SendResult> all = new ArrayList<>(batch.size());
        for (int i = 0; i < batch.size(); i++) {
            all.add(SendResult.unavailable(failure));
        }
        return all;
    }

    /** Waits, keeping the lease, for a send that outlasted the send timeout: one batch in flight per lane. */
    private void awaitUnfinishedSend(Duration max) throws LeaseKeeper.LeaseLostException {
        CompletableFuture<List<SendResult>> previous = unfinished;
        if (previous == null) {
            return;
        }
        try {
            keeper.await(connection, previous, max.toNanos());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (ExecutionException | TimeoutException e) {
            if (!previous.isDone()) {
                log.warn("txoutbox-relay {}: the previous batch is still unresolved by the transport", laneId);
                throw new IllegalStateException("previous batch of lane " + laneId + " unresolved");
            }
        }
        unfinished = null;
    }

    /** Marks delivered rows published and records failures per key, in one short transaction. */
    private Outcome record(Connection c, List<OutboxRecord> batch, List<SendResult> results, long ackedAt)
            throws SQLException, InterruptedException, LeaseKeeper.LeaseLostException {
        for (int i = 0; i < batch.size(); i++) {
            if (results.get(i) instanceof SendResult.Failed failed) {
                String topic = batch.get(i).topic();
                keeper.awayRun(c, () -> listener.sendFailed(topic, failed.kind()));
            }
        }
        FailurePlan update = planner.plan(batch, results, nextOutageBackoffPreview(), System.currentTimeMillis());
        counters.collateral.add(update.collateral);
        counters.unavailable.add(update.unavailable);
        counters.failedAttempts.add(update.failedAttempts);
        List<Long> published = update.published;
        boolean outage = update.outage;
        if (!update.deadLetters.isEmpty() && config.deadLetterTopic() != null) {
            sendToDeadLetterTopic(c, update);
        }
        keeper.ensureAlive("before the mark");
        while (true) {
            try {
                mark(c, published, update);
                TestHooks.hit(TestHooks.AFTER_MARK_BEFORE_COMMIT);
                c.commit();
                talked();
                markRetries.succeeded();
                break;
            } catch (SQLException e) {
                Jdbc.rollbackQuietly(c);
                if (PgErrors.isSessionLost(e)) {
                    markRetries.ended();
                    counters.fencedMarks.increment();
                    log.warn("txoutbox-relay {}: mark rejected: the lane's session ended (lease lost, SQLState {}); "
                            + "{} delivered events stay pending and the lane's new owner sends them again", laneId,
                            e.getSQLState(), published.size());
                    throw e;
                }
                if (stopping || Privileges.isDenied(e) || BackendCheck.isMismatch(e)) { // retrying cannot help
                    markRetries.ended();
                    if (!published.isEmpty()) {
                        log.warn("txoutbox-relay {}: {} delivered events could not be marked ({}); they will be sent "
                                + "again", laneId, published.size(), e.getMessage());
                    }
                    throw e;
                }
                // Not the session: keep the lane and the batch's results, and try the mark again (MarkRetries).
                long backoff = markRetries.failed(e, published.size());
                keeper.awayRun(c, () -> listener.loopFailed(e));
                pause(backoff);
                if (connection != c) { // the heartbeat of the backoff found the session gone
                    throw new LeaseKeeper.LeaseLostException("the lane's session ended while the mark was retried",
                            e);
                }
            }
        }
        lastBatchMillis = System.currentTimeMillis();
        lastBatchSize = batch.size();
        counters.published.add(published.size());
        counters.contractBreaks.add(update.contractBreaks);
        counters.parked.add(update.parked);
        counters.dead.add(update.dead);
        keeper.awayRun(c, () -> {
            reportPublished(batch, results, ackedAt);
            for (int i = 0; i < update.ids.size(); i++) {
                switch (update.states.get(i)) {
                    case PARKED -> listener.keyParked(update.topics.get(i));
                    case DEAD -> listener.deadLettered(update.topics.get(i));
                    default -> { }
                }
            }
        });
        if (outage) {
            counters.outages.increment();
            return Outcome.OUTAGE;
        }
        return Outcome.WORKED;
    }

    /** The statements of the mark transaction: delivered rows published, failures recorded (not committed). */
    private void mark(Connection c, List<Long> published, FailurePlan update) throws SQLException {
        if (statements.partitioned()) {
            try (Statement st = c.createStatement()) {
                st.execute(RelayStatements.GENERIC_PLANS);
            }
        }
        if (!published.isEmpty()) {
            try (PreparedStatement ps = c.prepareStatement(backendCheck.guard(statements.markPublished()))) {
                ps.setArray(1, c.createArrayOf("bigint", published.toArray(new Long[0])));
                int marked = ps.executeUpdate();
                if (marked != published.size()) {
                    log.warn("txoutbox-relay {}: marked {} of {} delivered rows; the others were changed by an "
                            + "operator meanwhile", laneId, marked, published.size());
                }
            }
        }
        if (!update.ids.isEmpty()) {
            try (PreparedStatement ps = c.prepareStatement(backendCheck.guard(statements.recordFailures()))) {
                ps.setArray(1, c.createArrayOf("bigint", update.ids.toArray(new Long[0])));
                ps.setArray(2, c.createArrayOf("text", update.errors.toArray(new String[0])));
                ps.setArray(3, c.createArrayOf("bigint", update.delays.toArray(new Long[0])));
                ps.setArray(4, c.createArrayOf("text", update.stateNames()));
                ps.setArray(5, c.createArrayOf("integer", update.addAttempts.toArray(new Integer[0])));
                ps.executeUpdate();
            }
        }
    }

    /** Commit→ack latency per published event: its age at the claim, plus claim to acknowledgement. */
    private void reportPublished(List<OutboxRecord> batch, List<SendResult> results, long ackedAt) {
        long sinceClaim = Math.max(0, ackedAt - claimedAtNanos);
        for (int i = 0; i < batch.size(); i++) {
            if (results.get(i) instanceof SendResult.Delivered) {
                listener.published(batch.get(i).topic(), claimAgeMicros[i] * 1_000 + sinceClaim);
            }
        }
    }

    private void sendToDeadLetterTopic(Connection c, FailurePlan update)
            throws InterruptedException, LeaseKeeper.LeaseLostException {
        List<FailurePlan.DeadLetter> dead = update.deadLetters;
        List<OutboxRecord> records = new ArrayList<>(dead.size());
        for (FailurePlan.DeadLetter f : dead) {
            OutboxRecord r = f.record();
            Map<String, String> headers = new HashMap<>(r.headers());
            headers.put("dlt-original-topic", r.topic());
            headers.put("dlt-exception", f.failed().cause().getClass().getName());
            headers.put("dlt-reason", FailurePlanner.truncate(FailurePlanner.describe(f.failed()), 1000));
            headers.put("dlt-attempts", Integer.toString(r.attempts() + 1));
            records.add(r.redirect(config.deadLetterTopic(), headers));
        }
        List<SendResult> results;
        String failure = null;
        try {
            // like the batch's send: the call may block, the wait keeps the lease, a lost session ends it
            CompletableFuture<List<SendResult>> sending = keeper.away(c,
                    () -> transport.send(transportLane.forDeadLetters(), records).toCompletableFuture());
            results = keeper.await(c, sending, config.sendTimeout().toNanos());
        } catch (ExecutionException | TimeoutException | RuntimeException e) {
            results = null;
            failure = e instanceof ExecutionException && e.getCause() != null ? e.getCause().toString()
                    : e.toString();
        }
        if (results != null && results.size() != records.size()) {
            // Results are matched to records by position: with one too many or too few nothing says which belongs
            // to which, so the whole send counts as failed rather than taking an event as dead-lettered on a guess.
            failure = "transport returned " + results.size() + " results for " + records.size()
                    + " dead-letter records (it must return one per record, in order)";
            log.error("txoutbox-relay {}: dead-letter send to {}: {}; the events stay pending and are retried",
                    laneId, config.deadLetterTopic(), failure);
            results = null;
        }
        for (int i = 0; i < records.size(); i++) {
            if (results == null || !results.get(i).isDelivered()) {
                // Not in the dead-letter topic: keep the event pending and try again later.
                String why = failure != null ? failure
                        : results.get(i) instanceof SendResult.Failed f ? FailurePlanner.describe(f) : "not delivered";
                planner.deadLetterFailed(update, dead.get(i).record(), why);
            }
        }
    }

    // ---- waiting ---------------------------------------------------------------------------------------------

    private long nextOutageBackoffPreview() {
        return Math.min(config.outageBackoffMax().toMillis(), Math.max(100, outageBackoffMs * 2));
    }

    private long nextOutageBackoff() {
        outageBackoffMs = nextOutageBackoffPreview();
        log.warn("txoutbox-relay {}: transport unavailable, pausing {} ms", laneId, outageBackoffMs);
        return outageBackoffMs;
    }

    /** Nothing to do: poll again soon after a nudge (the writer may not have committed yet), else at the interval. */
    private void idle() throws InterruptedException {
        long sinceNudge = System.nanoTime() - nudgedAt;
        if (sinceNudge < NUDGE_WINDOW_NANOS) {
            long ms = Math.max(1, TimeUnit.NANOSECONDS.toMillis(sinceNudge) / 4);
            wake.tryAcquire(Math.min(ms, 20), TimeUnit.MILLISECONDS);
        } else {
            // an idle lane still talks every third of the lease, so it keeps its lane
            wake.tryAcquire(Math.min(config.pollInterval().toNanos(), heartbeatNanos), TimeUnit.NANOSECONDS);
        }
        heartbeat();
    }

    private void pause(long ms) {
        try {
            long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(ms);
            while (!stopping) {
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    return;
                }
                // a nudge must not cut a backoff short: drain it and keep waiting
                wake.tryAcquire(Math.min(left, heartbeatNanos), TimeUnit.NANOSECONDS);
                heartbeat();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            stopping = true;
        }
    }
}
