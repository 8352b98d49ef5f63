package io.txoutbox.internal.lane;

/** What one turn of a lane's work came to, and so what its loop does next ({@link LaneLoop}). */
public enum Outcome {
    /** Nothing to do: wait for a nudge or the poll interval. */
    IDLE,
    /** A batch was handled: go on at once. */
    WORKED,
    /** The transport is unreachable: pause, growing, up to the outage maximum. */
    OUTAGE,
    /** The session ended while the lane worked: let it go; the next turn finds out who owns the lane now. */
    LEASE_LOST,
    /** Keep the lane (and its lock) but do nothing for a while: it must not be worked, nor taken by another. */
    HOLD,
    /** Hand the lane over: let its session go and stand by. */
    HAND_OVER
}
