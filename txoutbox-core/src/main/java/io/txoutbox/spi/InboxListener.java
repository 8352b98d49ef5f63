package io.txoutbox.spi;

import io.txoutbox.InboxWorkerConfig;

/**
 * What an inbox worker reports as it works, for metrics: register one with
 * {@code InboxWorker.builder().listener(...)}; {@code io.txoutbox.micrometer.MicrometerInboxListener} is the
 * ready-made Micrometer one. Every method has an empty default, so an implementation overrides what it needs.
 *
 * <p>Callbacks run on the worker's lane threads after a batch committed: keep them cheap and never block (increment
 * a counter, record a timer). They carry only primitives, strings and constants the worker already holds. An
 * exception thrown by a callback is caught and logged once; the worker goes on. Nothing is reported for a batch that
 * was rolled back (a database error): its events stay pending and are handled again.
 *
 * <p>Gauges of the inbox table (pending, age of the oldest pending event, parked keys, dead events, per consumer) do
 * not come through here: they are read by a query of their own every few seconds
 * ({@link io.txoutbox.InboxAdmin#backlog()}).
 */
public interface InboxListener {

    /** How a handler's failure was classified ({@code InboxWorker.Builder.permanentFailure}). */
    enum FailureKind {
        /** Retried with backoff until the retry policy's attempts are used up. */
        TRANSIENT,
        /** Not retried: the failure policy applies at once. */
        PERMANENT
    }

    /** Called once when the worker starts, before any other callback. */
    default void workerStarted(InboxWorkerConfig config) {
    }

    /**
     * A lane handled a batch in one transaction: {@code size} events claimed; how long the claim (database: the
     * waiting keys and the claim), the handlers (all of them, each under its savepoint) and the mark (database:
     * processed rows, failures, and the commit) took, in nanoseconds. Not called for an empty claim.
     */
    default void batchCompleted(int size, long claimNanos, long handleNanos, long markNanos) {
    }

    /**
     * One event was processed: its handler succeeded and the transaction committed. {@code handlerNanos}: the
     * handler's run; {@code receiveToProcessedNanos}: from its {@code received_at} (the start of the transaction that
     * stored it in the inbox, by the database's clock) to the commit of its processing — time waiting in the inbox,
     * retries included. {@code eventType} may be null (a message stored without one).
     */
    default void processed(String eventType, long handlerNanos, long receiveToProcessedNanos) {
    }

    /** An event's handler failed (its effects were rolled back to its savepoint); one call per failed attempt. */
    default void handlerFailed(String eventType, FailureKind kind) {
    }

    /** The worker parked the key of an event of this type (failure policy {@code PARK_KEY}). */
    default void keyParked(String eventType) {
    }

    /** The worker gave up an event of this type; its key moves on (failure policy {@code DEAD_LETTER_AND_CONTINUE}). */
    default void deadLettered(String eventType) {
    }

    /**
     * A lane's loop failed — a database error (connection lost, statement timeout), a handler that broke the
     * connection or committed it, or a bug — and it reconnects after a short pause; the batch's rows stay pending.
     */
    default void loopFailed(Throwable error) {
    }

    /** The listener that does nothing (the default). */
    static InboxListener none() {
        return NoInboxListener.INSTANCE;
    }
}
