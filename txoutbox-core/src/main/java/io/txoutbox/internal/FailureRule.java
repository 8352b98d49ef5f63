package io.txoutbox.internal;

import io.txoutbox.FailurePolicy;
import io.txoutbox.RetryPolicy;

/**
 * The one rule the relay and the inbox worker apply to a failed attempt (an event that failed to send, a handler
 * that failed): retry after the retry policy's backoff while attempts remain and the failure is not permanent; then
 * the failure policy decides — the key parks, or the event is dead and its key moves on.
 */
public enum FailureRule {
    /** Retry the key after {@link #delayMs}; the event stays PENDING. */
    RETRY,
    /** The key waits until an operator releases it: PARKED. */
    PARK,
    /** The event is given up and its key moves on: DEAD. */
    DEAD;

    /** What becomes of an event whose attempt number {@code attempts} (1 = the first failure) failed. */
    public static FailureRule after(int attempts, boolean permanent, RetryPolicy retry, FailurePolicy policy) {
        if (!permanent && attempts < retry.maxAttempts()) {
            return RETRY;
        }
        return policy == FailurePolicy.PARK_KEY ? PARK : DEAD;
    }

    /** The row's state column for this outcome (outbox and inbox spell their states alike). */
    public String state() {
        return switch (this) {
            case RETRY -> "PENDING";
            case PARK -> "PARKED";
            case DEAD -> "DEAD";
        };
    }

    /** How long the key waits before its next try: the backoff of its attempt for a retry, else 0 ms. */
    public long delayMs(int attempts, RetryPolicy retry) {
        return this == RETRY ? retry.backoffAfter(attempts).toMillis() : 0L;
    }

    /** How the failure reads in a log line: "failed permanently", or "failed 3 times". */
    public static String why(int attempts, boolean permanent) {
        return permanent ? "failed permanently" : "failed " + attempts + " times";
    }
}
