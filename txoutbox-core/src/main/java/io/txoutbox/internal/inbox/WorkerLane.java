package io.txoutbox.internal.inbox;

import io.txoutbox.InboxWorkerConfig;
import io.txoutbox.internal.lane.LaneLoop;
import io.txoutbox.internal.lane.LaneShards;
import io.txoutbox.internal.lane.Outcome;
import io.txoutbox.internal.lane.SessionLease;
import io.txoutbox.internal.pg.AdvisoryLocks;
import io.txoutbox.internal.pg.InboxStatements;
import io.txoutbox.spi.InboxListener;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.function.Consumer;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One lane of an inbox worker: the inbox shards with {@code shard % lanes == index}, worked by one thread with one
 * connection that holds the lane's advisory lock for this consumer, so no two workers ever process one key at once
 * ({@link LaneLoop}, shared with the relay: the same lease, heartbeats, standby and backoff). One batch (one
 * transaction, a savepoint per event) at a time ({@link InboxBatch}). The session's bounds follow the handler budget
 * ({@link InboxSession}), not the relay's statement timeout: handlers run inside the lane's transaction.
 */
final class WorkerLane implements Runnable, LaneLoop.Work {

    private static final Logger log = LoggerFactory.getLogger(WorkerLane.class);

    private final InboxWorkerConfig config;
    private final int index;
    private final String laneId;
    private final int consumerHash;
    private final InboxCounters counters;
    private final InboxListener listener;
    /** Told when the lane meets "permission denied" (42501): the worker stops. */
    private final Consumer<Throwable> denied;
    private final LaneLoop loop;
    private final InboxBatch batch;

    WorkerLane(InboxWorkerConfig config, int index, DataSource dataSource, InboxStatements statements,
            InboxCounters counters, InboxListener listener, Consumer<Throwable> denied, HandlerWatchdog watchdog) {
        this.config = config;
        this.index = index;
        this.laneId = config.name() + "-" + index;
        this.consumerHash = AdvisoryLocks.inboxConsumerHash(statements.schemaName(), config.consumer());
        this.counters = counters;
        this.listener = listener;
        this.denied = denied;
        Integer[] shards = LaneShards.of(InboxWorkerConfig.INBOX_SHARDS, config.lanes(), index);
        // no outage pause (a handler's failure is its event's) and no call out of the lane: the lease bounds both
        this.loop = new LaneLoop(new LaneLoop.Settings("txoutbox-inbox", "inbox worker", laneId,
                "consumer " + config.consumer() + ", shards " + Arrays.toString(shards), dataSource,
                config.leaseTimeout(), config.pollInterval(), config.leaseTimeout(), config.leaseTimeout(),
                Duration.ZERO), this);
        this.batch = new InboxBatch(config, laneId, shards, statements, counters, listener, watchdog,
                loop.backendCheck(), loop.keeper());
    }

    String id() {
        return laneId;
    }

    void nudge() {
        loop.nudge();
    }

    void stop() {
        loop.stop();
    }

    @Override
    public void run() {
        loop.run();
    }

    @Override
    public AdvisoryLocks.Key laneKey() {
        return AdvisoryLocks.inboxLane(consumerHash, index);
    }

    @Override
    public AdvisoryLocks.Key laneCountKey() {
        return AdvisoryLocks.inboxLaneCount(consumerHash, config.lanes());
    }

    @Override
    public int lanes() {
        return config.lanes();
    }

    /** Every worker of a consumer tries every lane: there is no fair share to keep. */
    @Override
    public String reserve() {
        return null;
    }

    @Override
    public void unreserve() {
        // nothing reserved
    }

    @Override
    public int configure(Connection c) throws SQLException {
        // the lease, and READ COMMITTED like every txoutbox session; the handler's effects share the batch's
        // transaction, so they run at it too
        return SessionLease.configure(c, InboxSession.settings(config, laneId));
    }

    @Override
    public String takenReason() {
        return "another worker of consumer " + config.consumer() + " owns this lane";
    }

    @Override
    public void laneCountConflict(List<Integer> otherLaneCounts) {
        log.error("txoutbox-inbox {}: another worker of consumer {} runs with lanes={} but this one has lanes={}:"
                + " lanes would overlap and break per-key order, so this lane waits. Give every worker of a"
                + " consumer the same lanes.", laneId, config.consumer(), otherLaneCounts, config.lanes());
    }

    @Override
    public void owned(Connection c) {
        log.info("txoutbox-inbox {}: owns the lane now", laneId);
        counters.lanesOwned.incrementAndGet();
    }

    @Override
    public void tried(boolean owns) {
        // nothing waits for the first try
    }

    @Override
    public Outcome runBatch(Connection c) throws SQLException {
        return batch.run(c);
    }

    @Override
    public void released(boolean wasOwner) {
        if (wasOwner) {
            counters.lanesOwned.decrementAndGet();
        }
    }

    @Override
    public void failed(Throwable t, boolean fatal) {
        counters.loopErrors.increment();
        if (fatal) {
            denied.accept(t);
        } else {
            listener.loopFailed(t); // its batch rolled back: the rows stay pending
        }
    }

    @Override
    public void stopped(Connection c) {
        // a batch ends within the loop's turn: nothing is left in flight
    }
}
