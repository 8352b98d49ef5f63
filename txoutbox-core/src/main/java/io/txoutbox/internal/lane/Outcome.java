package io.txoutbox.internal.lane;

/** What one turn of a lane's work came to, and so what its loop does next ({@link LaneLoop}). */
public enum Outcome {
    /** Nothing to do: wait for a nudge or the poll interval. */
    IDLE,
    /** A full batch was handled: there may be more waiting, go on at once. */
    WORKED,
    /**
     * A batch was handled and it was not full: the lane has caught up. It goes on once its linger has passed since
     * this turn began ({@link LaneLoop.Settings#linger}; at once when that is zero).
     */
    CAUGHT_UP,
    /** The transport is unreachable: pause, growing, up to the outage maximum. */
    OUTAGE,
    /** The session ended while the lane worked: let it go; the next turn finds out who owns the lane now. */
    LEASE_LOST,
    /** Keep the lane (and its lock) but do nothing for a while: it must not be worked, nor taken by another. */
    HOLD,
    /** Hand the lane over: let its session go and stand by. */
    HAND_OVER
}
