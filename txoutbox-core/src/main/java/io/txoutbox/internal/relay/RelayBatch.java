package io.txoutbox.internal.relay;

import io.txoutbox.OutboxException;
import io.txoutbox.RelayConfig;
import io.txoutbox.internal.BackendCheck;
import io.txoutbox.internal.TestHooks;
import io.txoutbox.internal.lane.LeaseKeeper;
import io.txoutbox.internal.lane.Outcome;
import io.txoutbox.internal.pg.Jdbc;
import io.txoutbox.internal.pg.RelayStatements;
import io.txoutbox.internal.progress.ProgressModel;
import io.txoutbox.spi.OutboxRecord;
import io.txoutbox.spi.RelayListener;
import io.txoutbox.spi.SendResult;
import io.txoutbox.spi.Transport;
import io.txoutbox.spi.TransportLane;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One batch of a relay lane, on the lane's one session: claim (behind the claim floor, in one READ COMMITTED
 * transaction), send, wait for the transport's verdict keeping the lease, then record it ({@link RelayMark}). One
 * batch in flight per lane: a send that outlasted the send timeout is waited for before the next one starts.
 */
final class RelayBatch {

    private static final Logger log = LoggerFactory.getLogger(RelayBatch.class);
    private static final AtomicBoolean TOLD_NO_COMMIT_TIMESTAMPS = new AtomicBoolean();

    /** What a batch needs from its lane beyond the session it runs on. */
    interface Host {
        /** The lane's session now: another than the batch's, or null, once the lease was found lost. */
        Connection connection();

        /** Where the lane's session came from; only an injected defect takes another connection from it. */
        javax.sql.DataSource dataSource();

        boolean isStopping();

        /** Waits, keeping the lease, unless the lane stops. */
        void pause(long ms);

        /** The lane's next outage pause: how long a key waits while the broker is unreachable. */
        long outageDelayMs();

        /** Another outbox uses the lane's fencing id ({@link FencingGuard}). */
        void fencingConflict(OutboxException conflict);
    }

    private final RelayConfig config;
    private final String laneId;
    private final long laneKey;
    private final Integer[] shards;
    private final Transport transport;
    private final RelayStatements statements;
    private final RelayCounters counters;
    private final RelayListener listener;
    private final LeaseKeeper keeper;
    private final RelayMark mark;
    /** What the progress model keeps about this lane (its claim floor, its cursor). */
    private final ProgressModel.Lane progress;
    private final Host host;
    private final FencingGuard fencing = new FencingGuard();
    /** The lane's proof of ownership, for what the claim's transaction writes. */
    private final BackendCheck backendCheck;
    /** Per event of the batch in flight: how long before its claim its commit→ack latency started (µs). */
    private final long[] claimAgeMicros;
    private long claimedAtNanos;
    private boolean commitTimestamps;
    private CompletableFuture<List<SendResult>> unfinished;
    /** The lane as the transport sees it (the outbox's installation id), read each time the lane is taken. */
    private TransportLane transportLane;

    RelayBatch(RelayConfig config, String laneId, long laneKey, Integer[] shards, Transport transport,
            RelayStatements statements, ProgressModel.Lane progress, RelayCounters counters, RelayListener listener,
            LeaseKeeper keeper, BackendCheck backendCheck, Host host) {
        this.config = config;
        this.laneId = laneId;
        this.laneKey = laneKey;
        this.shards = shards;
        this.transport = transport;
        this.statements = statements;
        this.progress = progress;
        this.counters = counters;
        this.listener = listener;
        this.keeper = keeper;
        this.host = host;
        this.claimAgeMicros = new long[config.batchSize()];
        this.backendCheck = backendCheck;
        this.mark = new RelayMark(config, laneId, transport, progress, counters, listener, keeper, backendCheck, host);
    }

    /** The lane was (re)taken on {@code c}: another instance may have owned it meanwhile. */
    void owned(Connection c, TransportLane lane) throws SQLException {
        transportLane = lane;
        commitTimestamps = tracksCommitTimestamps(c);
        progress.reset();
        fencing.reset();
    }

    /**
     * The lane is about to let its session go on purpose, no batch in flight: the progress model records what is
     * left ({@link ProgressModel.Lane#letGo}). A failure only costs duplicates, so it is logged.
     */
    void lettingGo(Connection c) {
        try {
            progress.letGo(c, backendCheck);
        } catch (SQLException | RuntimeException e) {
            Jdbc.rollbackQuietly(c);
            log.warn("txoutbox-relay {}: could not record the lane's last deliveries before letting it go ({}); its "
                    + "next owner may send some of them again", laneId, e.toString());
        }
    }

    /** The lane let its session go. */
    void released() {
        progress.reset();
    }

    long lastBatchMillis() {
        return mark.lastBatchMillis();
    }

    int lastBatchSize() {
        return mark.lastBatchSize();
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

    /** Claims, sends and records one batch on the lane's session {@code c}. */
    Outcome run(Connection c) throws Exception {
        List<OutboxRecord> batch;
        long claimStart = System.nanoTime();
        try {
            ProgressModel.Claim claim = progress.claim(c, new ProgressModel.ClaimRequest(shards, backendCheck,
                    config.batchSize(), config.maxBatchBytes(), commitTimestamps, claimAgeMicros));
            batch = claim.records();
            claimedAtNanos = claim.claimedAtNanos();
            keeper.talked();
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
            awaitUnfinishedSend(c, config.sendTimeout());
            keeper.ensureOwner(c, "before the send"); // a session lost since the claim sends nothing
            t0 = System.nanoTime();
            CompletableFuture<List<SendResult>> sending = keeper.away(c, () -> send(batch));
            TestHooks.hit(TestHooks.AFTER_SEND_BEFORE_ACK);
            List<SendResult> results = await(c, sending, batch);
            ackedAt = System.nanoTime();
            counters.batches.increment();
            if (results.stream().anyMatch(SendResult::isDelivered)) {
                TestHooks.hit(TestHooks.AFTER_ACK_BEFORE_MARK); // the window that matters: acknowledged, not marked
            }
            outcome = mark.record(c, transportLane, batch, results, claimAgeMicros, ackedAt - claimedAtNanos);
            OutboxException stop = fencing.check(c, laneKey, transportLane, statements.installationTable(), results);
            if (stop != null) {
                host.fencingConflict(stop);
            }
        } catch (LeaseKeeper.LeaseLostException e) {
            return leaseLost(e, batch.size());
        }
        long done = System.nanoTime();
        long sendNanos = ackedAt - t0;
        keeper.awayRun(c, () -> listener.batchCompleted(batch.size(), claimNanos, sendNanos, done - ackedAt));
        if (log.isDebugEnabled()) {
            log.debug("txoutbox-relay {}: batch of {} handled in {} ms", laneId, batch.size(), (done - t0) / 1_000_000);
        }
        return outcome == Outcome.WORKED && !full(batch) ? Outcome.CAUGHT_UP : outcome;
    }

    /** Whether the claim stopped at a limit (there may be more waiting) rather than at the end of what was there. */
    private boolean full(List<OutboxRecord> batch) {
        if (batch.size() >= config.batchSize()) {
            return true;
        }
        long bytes = 0;
        for (OutboxRecord r : batch) {
            bytes += r.valueSize();
        }
        return bytes >= config.maxBatchBytes();
    }

    /**
     * The session ended while the lane waited outside the database: the lane is no longer the owner. It marks
     * nothing (the mark would be fenced) and sends nothing more on this session; the lane's next owner sends the
     * batch's events again — duplicates bounded by the batch in flight.
     */
    private Outcome leaseLost(LeaseKeeper.LeaseLostException e, int inFlight) {
        counters.fencedMarks.increment();
        mark.ended();
        log.warn("txoutbox-relay {}: {}; the lane marks nothing and sends nothing more on this session, and its "
                + "next owner sends the {} events of the batch in flight again", laneId, e.getMessage(), inFlight);
        listener.loopFailed(e); // as a mark refused after a lost lease always was
        return Outcome.LEASE_LOST;
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
    private List<SendResult> await(Connection c, CompletableFuture<List<SendResult>> sending,
            List<OutboxRecord> batch) throws InterruptedException, LeaseKeeper.LeaseLostException {
        Throwable failure;
        try {
            List<SendResult> results;
            try {
                results = keeper.await(c, sending, config.sendTimeout().toNanos());
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

    /**
     * Waits up to {@code max}, keeping the lease of {@code c} (null: none), for a send that outlasted the send
     * timeout: one batch in flight per lane.
     */
    void awaitUnfinishedSend(Connection c, Duration max) throws LeaseKeeper.LeaseLostException {
        CompletableFuture<List<SendResult>> previous = unfinished;
        if (previous == null || io.txoutbox.internal.Defects.active(
                io.txoutbox.internal.Defects.Defect.SECOND_BATCH_IN_FLIGHT)) {
            return;
        }
        try {
            keeper.await(c, previous, max.toNanos());
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
}
