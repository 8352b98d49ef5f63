package io.txoutbox.spi;

import java.util.concurrent.CompletionStage;

/**
 * Where a relay sends events: Kafka in {@code txoutbox-kafka}, memory in the {@code txoutbox-test} kit.
 *
 * <p>One asynchronous send per record; batching is the relay's job. A relay hands over a whole batch with
 * {@link #send} (which must not block on the broker), calls {@link #flush()} once, then waits on the stages. A stage
 * completes normally once the broker has durably accepted the record, and exceptionally otherwise; the relay
 * classifies the failure with {@link #isRetriable(Throwable)}.
 *
 * <p>Records of one key are sent in outbox order, one batch at a time. An implementation must keep that order on the
 * wire and must never let a later record of a key be accepted after an earlier one of the same batch failed.
 */
public interface Transport extends AutoCloseable {

    /** Hands the record over for sending; the stage completes when the broker acknowledged it or it failed. */
    CompletionStage<Void> send(OutboxRecord record);

    /** Pushes out everything handed over so far without waiting for acknowledgements. */
    default void flush() {
    }

    /**
     * Whether a failure may go away by itself (broker down, timeout) — the relay retries with backoff — or will
     * repeat until someone acts (record too large, unknown topic) — the relay applies the failure policy at once.
     */
    default boolean isRetriable(Throwable failure) {
        return true;
    }

    @Override
    default void close() {
    }
}
