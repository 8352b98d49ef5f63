package io.txoutbox.spi;

import java.util.List;
import java.util.concurrent.CompletionStage;

/**
 * Where a relay sends events: Kafka in {@code txoutbox-kafka}, memory in the {@code txoutbox-test} kit.
 *
 * <p>One asynchronous method. A relay lane hands over a whole batch in outbox order; the transport sends it without
 * blocking on the broker per record (send all, flush once, then wait) and completes the stage with one
 * {@link SendResult} per record, in the batch's order.
 *
 * <p><b>The ordering contract.</b> For every partition key, the results of a batch are some {@code Delivered}
 * followed by some {@code Failed} — never a delivered record after a failed one of the same key — and a record
 * reported failed must not become visible to consumers after a later record of its key. Report a broker that
 * cannot be reached as {@code UNAVAILABLE} (the relay waits, counting no attempt) and problems of a record as
 * {@code RETRIABLE} or {@code PERMANENT}. The Kafka transport keeps it
 * with one Kafka transaction per batch; the in-memory one stops a key at its first failure.
 *
 * <p><b>Lanes.</b> {@code lane} names the relay lane sending the batch; it is stable across restarts and instances,
 * and a transport may use it to fence an older sender of the same lane (Kafka: the {@code transactional.id}).
 * A lane sends one batch at a time. The relay calls {@link #send(TransportLane, List)}, which also says which outbox
 * the lane belongs to ({@link TransportLane#fencingKey()}: the same for every instance of one outbox, different for
 * every other outbox); a transport that fences keys its senders by that, so that one transport may serve the relays
 * of several outboxes. A sender fenced by a newer one is reported {@code UNAVAILABLE} with a
 * {@link SenderFencedException} cause.
 */
public interface Transport extends AutoCloseable {

    /** Sends the batch; the stage completes once every record is acknowledged or failed. */
    CompletionStage<List<SendResult>> send(String lane, List<OutboxRecord> batch);

    /**
     * Sends the batch of a relay lane; what the relay calls. The default sends it as {@link #send(String, List)} with
     * the lane's name; a transport that fences older senders overrides it to key them by
     * {@link TransportLane#fencingKey()}.
     */
    default CompletionStage<List<SendResult>> send(TransportLane lane, List<OutboxRecord> batch) {
        return send(lane.name(), batch);
    }

    /**
     * Called when this relay instance takes {@code lane}, before the lane's first batch: a transport may connect
     * and initialise what the lane sends with (Kafka: the lane's transactional producer) now, so that the first event
     * does not wait for it. Must not block: the stage completes when the lane is ready to send (or getting ready
     * failed: failures are the transport's to log, and its first send tries again). {@code PollingRelay.start()}
     * waits a few seconds for it.
     */
    default CompletionStage<Void> prepare(TransportLane lane) {
        return java.util.concurrent.CompletableFuture.completedFuture(null);
    }

    /** Releases producers and connections; idempotent. */
    @Override
    default void close() {
    }
}
