package io.txoutbox;

/**
 * What happens to an event that failed permanently (too large, unserialisable, unknown topic) or ran out of attempts.
 * Used by every relay and by the inbox worker.
 */
public enum FailurePolicy {
    /**
     * The event is parked and its key stops: later events of the key wait until an operator releases it (retry now)
     * or skips it. No event of the key is ever delivered out of order. The default.
     */
    PARK_KEY,
    /**
     * The event moves to the dead state (and, if configured, to a dead-letter topic with the reason in headers), and
     * the key moves on with its next event. Trades the order of that one event for availability.
     */
    DEAD_LETTER_AND_CONTINUE
}
