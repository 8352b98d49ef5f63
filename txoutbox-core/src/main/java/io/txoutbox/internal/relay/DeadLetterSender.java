package io.txoutbox.internal.relay;

import io.txoutbox.RelayConfig;
import io.txoutbox.internal.lane.LeaseKeeper;
import io.txoutbox.spi.OutboxRecord;
import io.txoutbox.spi.SendResult;
import io.txoutbox.spi.Transport;
import io.txoutbox.spi.TransportLane;
import java.sql.Connection;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeoutException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Sends a batch's dead events to {@code relay.deadLetterTopic}, with the {@code dlt-*} headers that say where each
 * came from and why it died. An event the dead-letter topic did not take is not dead: its plan reverts it to PENDING
 * ({@link FailurePlanner#deadLetterFailed}), so no event is given up without landing somewhere.
 */
final class DeadLetterSender {

    private static final Logger log = LoggerFactory.getLogger(DeadLetterSender.class);
    private static final int MAX_REASON_LENGTH = 1000;

    private final RelayConfig config;
    private final String laneId;
    private final Transport transport;
    private final LeaseKeeper keeper;
    private final FailurePlanner planner;

    DeadLetterSender(RelayConfig config, String laneId, Transport transport, LeaseKeeper keeper,
            FailurePlanner planner) {
        this.config = config;
        this.laneId = laneId;
        this.transport = transport;
        this.keeper = keeper;
        this.planner = planner;
    }

    /** The dead events as the dead-letter topic gets them: their own headers and the {@code dlt-*} ones. */
    static List<OutboxRecord> records(String deadLetterTopic, List<FailurePlan.DeadLetter> dead) {
        List<OutboxRecord> records = new ArrayList<>(dead.size());
        for (FailurePlan.DeadLetter f : dead) {
            OutboxRecord r = f.record();
            Map<String, String> headers = new HashMap<>(r.headers());
            headers.put("dlt-original-topic", r.topic());
            headers.put("dlt-exception", f.failed().cause().getClass().getName());
            headers.put("dlt-reason", FailurePlanner.truncate(FailurePlanner.describe(f.failed()), MAX_REASON_LENGTH));
            headers.put("dlt-attempts", Integer.toString(r.attempts() + 1));
            records.add(r.redirect(deadLetterTopic, headers));
        }
        return records;
    }

    /**
     * Sends {@code plan}'s dead letters on {@code lane}, keeping the lease of {@code c} meanwhile (a lost session ends
     * the wait); those not delivered go back to PENDING in {@code plan}.
     */
    void send(Connection c, TransportLane lane, FailurePlan plan)
            throws InterruptedException, LeaseKeeper.LeaseLostException {
        List<FailurePlan.DeadLetter> dead = plan.deadLetters;
        List<OutboxRecord> records = records(config.deadLetterTopic(), dead);
        List<SendResult> results;
        String failure = null;
        try {
            // like the batch's send: the call may block, the wait keeps the lease, a lost session ends it
            CompletableFuture<List<SendResult>> sending = keeper.away(c,
                    () -> transport.send(lane.forDeadLetters(), records).toCompletableFuture());
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
                planner.deadLetterFailed(plan, dead.get(i).record(), why);
            }
        }
    }
}
