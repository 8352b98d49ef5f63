package io.txoutbox.spi;

import java.util.Objects;

/** The outcome of one record of a batch handed to a {@link Transport}. */
public sealed interface SendResult {

    /** The broker durably accepted the record (partition and offset are -1 where the transport has none). */
    record Delivered(int partition, long offset) implements SendResult {
    }

    /**
     * The record was not delivered.
     *
     * @param kind  what the relay should do about it
     * @param cause what went wrong (message is logged with the event id; never contains the payload)
     */
    record Failed(Kind kind, Throwable cause) implements SendResult {
        public Failed {
            Objects.requireNonNull(kind, "kind");
            Objects.requireNonNull(cause, "cause");
        }
    }

    enum Kind {
        /**
         * The broker could not be reached or did not answer (down, timeout, no leader): nothing is wrong with the
         * record. The relay backs off without counting an attempt, so an outage of any length parks nothing.
         */
        UNAVAILABLE,
        /** Something about this record failed and may succeed later: retry its key with backoff, count an attempt. */
        RETRIABLE,
        /** Will fail again until someone acts (too large, invalid topic): apply the failure policy now. */
        PERMANENT,
        /**
         * Not attempted or rolled back because another record failed (an earlier one of its key, or any record of
         * the same Kafka transaction): resend without counting an attempt.
         */
        COLLATERAL
    }

    static SendResult delivered() {
        return new Delivered(-1, -1L);
    }

    static SendResult unavailable(Throwable cause) {
        return new Failed(Kind.UNAVAILABLE, cause);
    }

    static SendResult retriable(Throwable cause) {
        return new Failed(Kind.RETRIABLE, cause);
    }

    static SendResult permanent(Throwable cause) {
        return new Failed(Kind.PERMANENT, cause);
    }

    static SendResult collateral(Throwable cause) {
        return new Failed(Kind.COLLATERAL, cause);
    }

    default boolean isDelivered() {
        return this instanceof Delivered;
    }
}
