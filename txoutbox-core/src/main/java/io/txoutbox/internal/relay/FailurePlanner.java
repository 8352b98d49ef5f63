package io.txoutbox.internal.relay;

import io.txoutbox.FailurePolicy;
import io.txoutbox.RelayConfig;
import io.txoutbox.RetryPolicy;
import io.txoutbox.internal.FailureRule;
import io.txoutbox.internal.LoggedKeys;
import io.txoutbox.internal.pg.EventState;
import io.txoutbox.spi.OutboxRecord;
import io.txoutbox.spi.SendResult;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The relay's failure rules, kept apart from JDBC and the transport so they can be tested without either: given a
 * batch, its send results and the policies, what becomes of each row ({@link FailurePlan}).
 *
 * <ul>
 * <li>the first failure of a key in the batch decides for the key; its later events just wait (they stay pending);
 * <li>COLLATERAL (rolled back with others) counts nothing: the event is simply sent again;
 * <li>UNAVAILABLE counts no attempt — an outage of any length parks nothing — and backs the key off with the lane, or
 * by its age when only its partition is sick ({@link PartitionBackoff});
 * <li>RETRIABLE counts an attempt and retries the key after the retry policy's backoff, until the attempts run out;
 * then, as for PERMANENT, the failure policy decides: the key parks, or the event goes dead (and to the dead-letter
 * topic) and the key moves on.
 * </ul>
 */
final class FailurePlanner {

    private static final Logger log = LoggerFactory.getLogger(FailurePlanner.class);
    static final int MAX_ERROR_LENGTH = 2000;

    private final String laneId;
    private final RetryPolicy retry;
    private final FailurePolicy policy;
    private final Duration outageBackoffMax;
    private final boolean logPartitionKeys;

    FailurePlanner(String laneId, RetryPolicy retry, FailurePolicy policy, Duration outageBackoffMax,
            boolean logPartitionKeys) {
        this.laneId = laneId;
        this.retry = retry;
        this.policy = policy;
        this.outageBackoffMax = outageBackoffMax;
        this.logPartitionKeys = logPartitionKeys;
    }

    static FailurePlanner of(RelayConfig config, String laneId) {
        return new FailurePlanner(laneId, config.retry(), config.failurePolicy(), config.outageBackoffMax(),
                config.logPartitionKeys());
    }

    RetryPolicy retry() {
        return retry;
    }

    /**
     * Plans the batch's outcome; {@code results.get(i)} is the result of {@code batch.get(i)}. {@code outageDelayMs}:
     * the lane's next outage pause, the delay of a key whose broker is unreachable; {@code nowMillis}: the clock a
     * sick partition's backoff counts the event's age by.
     */
    FailurePlan plan(List<OutboxRecord> batch, List<SendResult> results, long outageDelayMs, long nowMillis) {
        FailurePlan plan = new FailurePlan(batch.size());
        Set<String> failedKeys = new HashSet<>();
        boolean anyUnavailable = false;
        for (int i = 0; i < batch.size(); i++) {
            OutboxRecord r = batch.get(i);
            SendResult result = results.get(i);
            if (result instanceof SendResult.Delivered) {
                if (r.key() != null && failedKeys.contains(r.key())) {
                    plan.contractBreaks++;
                    log.error("txoutbox-relay {}: transport delivered event {} after an earlier event of its key "
                            + "failed: it breaks the Transport ordering contract", laneId, r.eventId());
                }
                plan.published.add(r.id());
                continue;
            }
            SendResult.Failed failed = (SendResult.Failed) result;
            if (failed.kind() == SendResult.Kind.COLLATERAL) {
                plan.collateral++; // rolled back with others: simply sent again, in order
                continue;
            }
            if (r.key() != null && !failedKeys.add(r.key())) {
                continue; // a later event of a key that already failed in this batch: it just waits
            }
            // one sick partition while the broker answers is not an outage: only its keys back off
            anyUnavailable |= failed.kind() == SendResult.Kind.UNAVAILABLE
                    && !PartitionBackoff.isPartitionScoped(failed);
            decide(r, failed, plan, outageDelayMs, nowMillis);
        }
        plan.outage = plan.published.isEmpty() && anyUnavailable;
        return plan;
    }

    private void decide(OutboxRecord r, SendResult.Failed failed, FailurePlan plan, long outageDelayMs,
            long nowMillis) {
        String error = describe(failed);
        if (failed.kind() == SendResult.Kind.UNAVAILABLE) {
            // The broker is unreachable: back the key off with the lane, count no attempt — an outage must not park.
            plan.unavailable++;
            long delay = PartitionBackoff.isPartitionScoped(failed)
                    ? PartitionBackoff.delayMs(r, outageBackoffMax, nowMillis)
                    : Math.max(outageDelayMs, 1);
            plan.add(r, "transport unavailable: " + error, delay, EventState.PENDING, 0);
            return;
        }
        plan.failedAttempts++;
        int attempts = r.attempts() + 1;
        boolean permanent = failed.kind() == SendResult.Kind.PERMANENT;
        FailureRule rule = FailureRule.after(attempts, permanent, retry, policy);
        long delay = rule.delayMs(attempts, retry);
        String why = FailureRule.why(attempts, permanent);
        switch (rule) {
            case RETRY -> {
                log.warn("txoutbox-relay {}: event {} (key {}) failed, attempt {} of {}, retry in {} ms: {}", laneId,
                        r.eventId(), key(r.key()), attempts, retry.maxAttempts(), delay, error);
                plan.add(r, error, delay, EventState.PENDING, 1);
            }
            case PARK -> {
                log.error("txoutbox-relay {}: event {} {}; its key {} is parked until an operator releases it: {}",
                        laneId, r.eventId(), why, key(r.key()), error);
                plan.add(r, error, delay, EventState.PARKED, 1);
                plan.parked++;
            }
            case DEAD -> {
                log.error("txoutbox-relay {}: event {} {}; dead-lettered, key {} moves on: {}", laneId, r.eventId(),
                        why, key(r.key()), error);
                plan.add(r, error, delay, EventState.DEAD, 1);
                plan.dead++;
                plan.deadLetters.add(new FailurePlan.DeadLetter(r, failed));
            }
        }
    }

    /**
     * The dead-letter send of {@code r} failed ({@code why}): back to PENDING, retried after the backoff of its
     * attempt — the attempt counts, the key waits rather than skipping the event.
     */
    void deadLetterFailed(FailurePlan plan, OutboxRecord r, String why) {
        long delay = retry.backoffAfter(r.attempts() + 1).toMillis();
        plan.deadLetterFailed(r, truncate("dead-letter topic send failed; will retry: " + why, MAX_ERROR_LENGTH),
                delay);
    }

    /** A partition key as this relay's log lines show it (see {@link RelayConfig#logPartitionKeys()}). */
    private String key(String key) {
        return LoggedKeys.show(key, logPartitionKeys);
    }

    static String describe(SendResult.Failed f) {
        Throwable c = f.cause();
        String msg = c.getClass().getSimpleName() + ": " + c.getMessage();
        return truncate(msg, MAX_ERROR_LENGTH);
    }

    static String truncate(String s, int max) {
        return s.length() <= max ? s : s.substring(0, max) + "…";
    }
}
