package io.txoutbox.internal.relay;

import io.txoutbox.OutboxException;
import io.txoutbox.RelayConfig;
import io.txoutbox.internal.BackendCheck;
import io.txoutbox.internal.lane.LaneLoop;
import io.txoutbox.internal.lane.LaneShards;
import io.txoutbox.internal.lane.LeaseKeeper;
import io.txoutbox.internal.lane.Outcome;
import io.txoutbox.internal.pg.AdvisoryLocks;
import io.txoutbox.internal.pg.RelayStatements;
import io.txoutbox.internal.progress.ProgressModel;
import io.txoutbox.spi.RelayListener;
import io.txoutbox.spi.Transport;
import io.txoutbox.spi.TransportLane;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One lane of the polling relay: a fixed share of the shards ({@code shard % lanes == index}), worked by one thread
 * with one connection that holds the lane's advisory lock ({@link LaneLoop}). One batch in flight at a time
 * ({@link RelayBatch}). The lane decides what the relay instance adds to the loop: its fair share of lanes
 * ({@link Governor}), the transport's view of the lane, and a lane held but idle while another outbox uses its
 * fencing id.
 */
final class Lane implements Runnable, LaneLoop.Work, RelayBatch.Host {

    private static final Logger log = LoggerFactory.getLogger(Lane.class);
    private static final Duration STOP_SEND_WAIT = Duration.ofSeconds(5);

    private final RelayConfig config;
    private final int index;
    private final String laneId;
    private final RelayStatements statements;
    private final Transport transport;
    private final RelayCounters counters;
    private final RelayListener listener;
    private final Governor governor;
    private final LaneLoop loop;
    private final RelayBatch batch;
    /** Set when another outbox uses this lane's fencing id: the lane keeps its lock and sends nothing. */
    private volatile OutboxException conflict;
    /** Counted down once the lane's first try to own its lane ended, and its transport is ready if it owns it. */
    private final CountDownLatch ready = new CountDownLatch(1);
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
        void fencingConflict(OutboxException conflict);
    }

    private final DataSource dataSource;

    @Override
    public DataSource dataSource() {
        return dataSource;
    }

    Lane(RelayConfig config, int index, DataSource dataSource, Transport transport, RelayStatements statements,
            ProgressModel progress, RelayCounters counters, RelayListener listener, Governor governor) {
        this.config = config;
        this.dataSource = dataSource;
        this.index = index;
        this.laneId = config.name() + "-" + index;
        this.statements = statements;
        this.transport = transport;
        this.counters = counters;
        this.listener = listener;
        this.governor = governor;
        Integer[] shards = LaneShards.of(config.schema().shards(), config.lanes(), index);
        this.loop = new LaneLoop(new LaneLoop.Settings("txoutbox-relay", "relay", laneId,
                "shards " + Arrays.toString(shards), dataSource, config.leaseTimeout(), config.pollInterval(),
                config.outageBackoffMax(), config.sendTimeout(), config.linger()), this);
        this.batch = new RelayBatch(config, laneId, laneKey().single(), shards, transport, statements,
                progress.lane(index, config.lanes(), shards),
                counters, listener, loop.keeper(), loop.backendCheck(), this);
    }

    String id() {
        return laneId;
    }

    int index() {
        return index;
    }

    boolean isOwner() {
        return loop.isOwner();
    }

    long ownedSinceMillis() {
        return loop.ownedSinceMillis();
    }

    long lastBatchMillis() {
        return batch.lastBatchMillis();
    }

    int lastBatchSize() {
        return batch.lastBatchSize();
    }

    /** When the lane last went once round its loop (a batch, an empty claim, a pause), or 0: never. */
    long lastLoopMillis() {
        return loop.lastLoopMillis();
    }

    void nudge() {
        loop.nudge();
    }

    void stop() {
        loop.stop();
        ready.countDown();
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
        loop.run();
    }

    // ---- the loop's work -------------------------------------------------------------------------------------

    @Override
    public AdvisoryLocks.Key laneKey() {
        return AdvisoryLocks.relayLane(config.schema(), index);
    }

    @Override
    public AdvisoryLocks.Key laneCountKey() {
        return AdvisoryLocks.relayLaneCount(config.schema(), config.lanes());
    }

    @Override
    public int lanes() {
        return config.lanes();
    }

    @Override
    public String reserve() {
        return governor.tryReserve() ? null : "this instance owns its fair share of lanes";
    }

    @Override
    public void unreserve() {
        governor.unreserve();
    }

    @Override
    public int configure(Connection c) throws SQLException {
        return LaneSession.configure(c, config, laneId + " " + governor.instanceId());
    }

    @Override
    public String takenReason() {
        return "another relay instance owns this lane";
    }

    @Override
    public void laneCountConflict(List<Integer> otherLaneCounts) {
        log.error("txoutbox-relay {}: another relay instance works {} with relay.lanes={} but this one has "
                + "relay.lanes={}: lanes would overlap and break per-key order, so this lane waits. Give every "
                + "instance the same relay.lanes.", laneId, config.schema(), otherLaneCounts, config.lanes());
    }

    @Override
    public void owned(Connection c) throws SQLException {
        TransportLane transportLane = Installation.read(c, statements).lane(laneId, index, governor.instanceId());
        batch.owned(c, transportLane);
        log.info("txoutbox-relay {}: owns the lane now ({})", laneId, governor.instanceId());
        try {
            // the producer is made now, not on the first event
            preparing = transport.prepare(transportLane).toCompletableFuture();
        } catch (RuntimeException e) {
            log.debug("txoutbox-relay {}: transport.prepare failed: {}", laneId, e.toString());
            preparing = CompletableFuture.completedFuture(null);
        }
    }

    /** After the first try to own the lane: ready at once when it stands by, else once its transport is ready. */
    @Override
    public void tried(boolean owns) {
        if (ready.getCount() > 0) {
            preparing.whenComplete((v, e) -> ready.countDown());
        }
    }

    @Override
    public Outcome runBatch(Connection c) throws Exception {
        if (conflict != null) { // holds the lane, so no instance of this outbox fences the other
            return Outcome.HOLD;
        }
        if (governor.mustRelease(index)) {
            log.info("txoutbox-relay {}: handing the lane over: this instance owns more than its fair share", laneId);
            batch.lettingGo(c);
            return Outcome.HAND_OVER;
        }
        return batch.run(c);
    }

    @Override
    public void released(boolean wasOwner) {
        batch.released();
        if (wasOwner) {
            governor.unreserve();
        }
    }

    @Override
    public void failed(Throwable t, boolean fatal) {
        ready.countDown();
        counters.loopErrors.increment();
        if (fatal) {
            governor.denied(t);
        } else {
            listener.loopFailed(t);
        }
    }

    @Override
    public void stopped(Connection c) {
        try {
            batch.awaitUnfinishedSend(c, STOP_SEND_WAIT);
        } catch (RuntimeException | LeaseKeeper.LeaseLostException e) {
            log.warn("txoutbox-relay {}: stopping with a batch still unresolved by the transport", laneId);
            return;
        }
        if (c != null && loop.isOwner()) {
            batch.lettingGo(c);
        }
    }

    // ---- what a batch needs from its lane ----------------------------------------------------------------------

    @Override
    public Connection connection() {
        return loop.connection();
    }

    @Override
    public boolean isStopping() {
        return loop.isStopping();
    }

    @Override
    public void pause(long ms) {
        loop.pause(ms);
    }

    @Override
    public long outageDelayMs() {
        return loop.outageDelayMs();
    }

    @Override
    public void fencingConflict(OutboxException stop) {
        if (conflict == null) {
            conflict = stop;
            log.error("txoutbox-relay {}: {}", laneId, stop.getMessage());
            governor.fencingConflict(stop);
        }
    }
}
