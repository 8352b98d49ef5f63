package io.txoutbox.internal.pg;

/**
 * The states of an inbox row ({@code inbox_event.state}, constraint {@code inbox_event_state}); spelled as quoted
 * literals in statements for the same reason as {@link EventState}.
 */
public enum InboxState {
    /** Stored, waiting for its handler. */
    PENDING,
    /** Handled. */
    PROCESSED,
    /** Held after repeated handler failures; its key waits. */
    PARKED,
    /** Given up by the failure policy or skipped by an operator; its key moved on. */
    DEAD,
    /** Given up for good by an operator (schema V10): final, never processed, never purged. */
    DISCARDED;

    private final String sql = "'" + name() + "'";

    /** The quoted SQL literal, e.g. {@code 'PROCESSED'}. */
    public String sql() {
        return sql;
    }
}
