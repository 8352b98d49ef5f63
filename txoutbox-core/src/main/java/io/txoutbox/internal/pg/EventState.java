package io.txoutbox.internal.pg;

/**
 * The states of an outbox row ({@code state} column, constraint {@code <table>_state}). Statements spell a state as
 * a quoted literal ({@link #sql()}), never as a bind parameter: the partial indexes ({@code WHERE state =
 * 'PENDING'}) are used under generic plans only when the predicate is a literal.
 */
public enum EventState {
    /** Waiting to be published (maybe after a retry delay, {@code next_attempt_at}). */
    PENDING,
    /** Held after repeated failures; its key waits until an operator releases it. */
    PARKED,
    /** Given up: sent to the dead-letter topic, or failed for good. */
    DEAD,
    /** Delivered to the transport. */
    PUBLISHED,
    /** Discarded by an operator. */
    DISCARDED,
    /**
     * Pending, held back behind its key's waiting head (cursor progress model only, schema version 11): not claimable,
     * made PENDING and due again when the head is resolved.
     */
    HELD;

    private final String sql = "'" + name() + "'";

    /** The quoted SQL literal, e.g. {@code 'PENDING'}. */
    public String sql() {
        return sql;
    }
}
