package io.txoutbox;

/**
 * The states an operator works on, in the outbox and the inbox: parked heads, dead events, and (to review, never
 * changed again) discarded ones.
 */
public enum FailedState {
    /** Held after repeated failures; the later events of its key wait behind it. */
    PARKED,
    /** Given up by the failure policy or skipped by an operator; its key moved on. Can be requeued. */
    DEAD,
    /** Given up for good by an operator: final, never sent or processed, kept for audit. */
    DISCARDED
}
