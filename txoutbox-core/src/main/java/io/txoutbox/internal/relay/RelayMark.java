package io.txoutbox.internal.relay;

import io.txoutbox.RelayConfig;
import io.txoutbox.internal.BackendCheck;
import io.txoutbox.internal.Defects;
import io.txoutbox.internal.Privileges;
import io.txoutbox.internal.TestHooks;
import io.txoutbox.internal.lane.LeaseKeeper;
import io.txoutbox.internal.lane.Outcome;
import io.txoutbox.internal.pg.Jdbc;
import io.txoutbox.internal.pg.PgErrors;
import io.txoutbox.internal.progress.ProgressModel;
import io.txoutbox.spi.OutboxRecord;
import io.txoutbox.spi.RelayListener;
import io.txoutbox.spi.SendResult;
import io.txoutbox.spi.Transport;
import io.txoutbox.spi.TransportLane;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Records a sent batch on the lane's session: delivered rows published and failures per key ({@link FailurePlanner}),
 * dead events to the dead-letter topic first ({@link DeadLetterSender}), all in one short transaction whose WHERE
 * carries the lane's proof of ownership. A mark that fails for another reason than a lost session is retried with
 * the batch's results kept ({@link MarkRetries}).
 */
final class RelayMark {

    private static final Logger log = LoggerFactory.getLogger(RelayMark.class);

    private final RelayConfig config;
    private final String laneId;
    private final ProgressModel.Lane progress;
    private final RelayCounters counters;
    private final RelayListener listener;
    private final LeaseKeeper keeper;
    private final RelayBatch.Host host;
    private final FailurePlanner planner;
    private final DeadLetterSender deadLetters;
    private final MarkRetries markRetries;
    /** Proves in the mark's WHERE that it runs on the session holding the lane's lock. */
    private final BackendCheck backendCheck;
    private volatile long lastBatchMillis;
    private volatile int lastBatchSize;

    RelayMark(RelayConfig config, String laneId, Transport transport, ProgressModel.Lane progress,
            RelayCounters counters, RelayListener listener, LeaseKeeper keeper, BackendCheck backendCheck,
            RelayBatch.Host host) {
        this.backendCheck = backendCheck;
        this.config = config;
        this.laneId = laneId;
        this.progress = progress;
        this.counters = counters;
        this.listener = listener;
        this.keeper = keeper;
        this.host = host;
        this.planner = FailurePlanner.of(config, laneId);
        this.deadLetters = new DeadLetterSender(config, laneId, transport, keeper, planner);
        this.markRetries = new MarkRetries(laneId, counters.markRetries);
    }

    long lastBatchMillis() {
        return lastBatchMillis;
    }

    int lastBatchSize() {
        return lastBatchSize;
    }

    /** The batch's outcome can no longer be recorded (the session ended): a retried mark is over. */
    void ended() {
        markRetries.ended();
    }

    /**
     * Marks delivered rows published and records failures per key, in one short transaction. {@code ageMicros[i]}:
     * event i's age at the claim; {@code sinceClaimNanos}: from the claim to the acknowledgement.
     */
    Outcome record(Connection c, TransportLane lane, List<OutboxRecord> batch, List<SendResult> results,
            long[] ageMicros, long sinceClaimNanos)
            throws SQLException, InterruptedException, LeaseKeeper.LeaseLostException {
        for (int i = 0; i < batch.size(); i++) {
            if (results.get(i) instanceof SendResult.Failed failed) {
                String topic = batch.get(i).topic();
                keeper.awayRun(c, () -> listener.sendFailed(topic, failed.kind()));
            }
        }
        FailurePlan plan = planner.plan(batch, results, host.outageDelayMs(), System.currentTimeMillis());
        counters.collateral.add(plan.collateral);
        counters.unavailable.add(plan.unavailable);
        counters.failedAttempts.add(plan.failedAttempts);
        if (!plan.deadLetters.isEmpty() && config.deadLetterTopic() != null) {
            deadLetters.send(c, lane, plan);
        }
        keeper.ensureAlive("before the mark");
        commitWithRetries(c, plan);
        lastBatchMillis = System.currentTimeMillis();
        lastBatchSize = batch.size();
        counters.published.add(plan.published.size());
        counters.contractBreaks.add(plan.contractBreaks);
        counters.parked.add(plan.parked);
        counters.dead.add(plan.dead);
        keeper.awayRun(c, () -> report(batch, results, plan, ageMicros, Math.max(0, sinceClaimNanos)));
        if (plan.outage) {
            counters.outages.increment();
            return Outcome.OUTAGE;
        }
        return Outcome.WORKED;
    }

    private void commitWithRetries(Connection c, FailurePlan plan)
            throws SQLException, LeaseKeeper.LeaseLostException {
        List<Long> published = plan.published;
        while (true) {
            try {
                mark(c, plan);
                TestHooks.hit(TestHooks.AFTER_MARK_BEFORE_COMMIT);
                c.commit();
                progress.markCommitted();
                keeper.talked();
                markRetries.succeeded();
                return;
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
                if (host.isStopping() || Privileges.isDenied(e) || BackendCheck.isMismatch(e)) {
                    markRetries.ended(); // retrying cannot help
                    if (!published.isEmpty()) {
                        log.warn("txoutbox-relay {}: {} delivered events could not be marked ({}); they will be sent "
                                + "again", laneId, published.size(), e.getMessage());
                    }
                    throw e;
                }
                // Not the session: keep the lane and the batch's results, and try the mark again (MarkRetries).
                long backoff = markRetries.failed(e, published.size());
                keeper.awayRun(c, () -> listener.loopFailed(e));
                host.pause(backoff);
                if (host.connection() != c) { // the heartbeat of the backoff found the session gone
                    throw new LeaseKeeper.LeaseLostException("the lane's session ended while the mark was retried",
                            e);
                }
            }
        }
    }

    /** The statements of the mark transaction: delivered rows published, failures recorded (not committed). */
    private void mark(Connection c, FailurePlan plan) throws SQLException {
        progress.markStarts(c);
        List<Long> published = plan.published;
        if (!published.isEmpty()) {
            Long[] ids = published.toArray(new Long[0]);
            int marked = Defects.active(Defects.Defect.MARK_ON_NEW_CONNECTION)
                    ? Defects.onNewConnection(host.dataSource(), other -> progress.delivered(other, ids, backendCheck))
                    : progress.delivered(c, ids, backendCheck);
            if (marked != published.size()) {
                log.warn("txoutbox-relay {}: marked {} of {} delivered rows; the others were changed by an "
                        + "operator meanwhile", laneId, marked, published.size());
            }
        }
        if (!plan.ids.isEmpty()) {
            progress.failed(c, plan.update(), backendCheck);
        }
        progress.markEnds(c, backendCheck);
    }

    /** Commit→ack latency per published event (its age at the claim, plus claim to ack); parked and dead keys. */
    private void report(List<OutboxRecord> batch, List<SendResult> results, FailurePlan plan, long[] ageMicros,
            long sinceClaimNanos) {
        for (int i = 0; i < batch.size(); i++) {
            if (results.get(i) instanceof SendResult.Delivered) {
                listener.published(batch.get(i).topic(), ageMicros[i] * 1_000 + sinceClaimNanos);
            }
        }
        for (int i = 0; i < plan.ids.size(); i++) {
            switch (plan.states.get(i)) {
                case PARKED -> listener.keyParked(plan.topics.get(i));
                case DEAD -> listener.deadLettered(plan.topics.get(i));
                default -> { }
            }
        }
    }
}
