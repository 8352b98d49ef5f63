package io.txoutbox.spi;

import io.txoutbox.RelayConfig;

/**
 * What a polling relay reports as it works, for metrics: register one with
 * {@code PollingRelay.builder().listener(...)}; {@code io.txoutbox.micrometer.MicrometerRelayListener} is the
 * ready-made Micrometer one. Every method has an empty default, so an implementation overrides what it needs.
 *
 * <p>Callbacks run on the relay's lane threads, right in the hot path: keep them cheap and never block (increment a
 * counter, record a timer). They carry only primitives and strings the relay already holds, so the relay allocates
 * nothing for them. An exception thrown by a callback is caught and logged once; the relay goes on.
 *
 * <p>Gauges of the table (pending, oldest pending event per topic, parked keys, dead events) do not come through
 * here: they are read by a query of their own every few seconds ({@link io.txoutbox.OutboxStatus}).
 */
public interface RelayListener {

    /** Called once when the relay starts, before any other callback. */
    default void relayStarted(RelayConfig config) {
    }

    /**
     * A lane handled a batch: {@code size} events claimed; how long the claim (database), the send (transport, until
     * the last acknowledgement or failure) and the mark (database: published rows and failures, one transaction)
     * took, in nanoseconds. Not called for an empty claim, nor when the batch ended in a database error.
     */
    default void batchCompleted(int size, long claimNanos, long sendNanos, long markNanos) {
    }

    /**
     * One event was published and marked. {@code commitToAckNanos}: from its transaction's commit to the broker's
     * acknowledgement — measured from PostgreSQL's commit timestamp when the server runs with
     * {@code track_commit_timestamp = on}, otherwise from the claim that first read the row (so it leaves out the
     * time the row waited before the relay saw it); for an event that failed before, from its {@code created_at}.
     */
    default void published(String topic, long commitToAckNanos) {
    }

    /**
     * The transport reported one event not delivered, by kind: {@code PERMANENT} (serialisation, too large, invalid
     * topic), {@code RETRIABLE} (the broker refused it for now), {@code UNAVAILABLE} (the broker cannot be reached),
     * {@code COLLATERAL} (rolled back or held back with another record; simply sent again).
     */
    default void sendFailed(String topic, SendResult.Kind kind) {
    }

    /** The relay parked the key of an event of this topic (failure policy {@code PARK_KEY}). */
    default void keyParked(String topic) {
    }

    /** The relay gave up an event of this topic (failure policy {@code DEAD_LETTER_AND_CONTINUE}). */
    default void deadLettered(String topic) {
    }

    /**
     * A lane's loop failed — a database error (connection lost, statement timeout, a mark refused after a lost
     * lease, the lease lost while the lane waited) or a bug — and it reconnects after a short pause. Also called for
     * each failed try of a mark that failed for a reason other than a lost session: the lane keeps its connection
     * and tries the mark again after a backoff.
     */
    default void loopFailed(Throwable error) {
    }

    /** The listener that does nothing (the default). */
    static RelayListener none() {
        return NoRelayListener.INSTANCE;
    }
}
