package io.txoutbox.spi;

import io.txoutbox.OutboxException;

/**
 * The cause a {@link Transport} gives the {@code UNAVAILABLE} results of a batch it could not send because a newer
 * sender of the same fencing identity took over (Kafka: another producer called {@code initTransactions()} with the
 * lane's {@code transactional.id}). Nothing of the batch was delivered.
 *
 * <p>Normally that newer sender is the lane's new owner, and this sender is the old one, whose lease is gone. When
 * the relay meets this cause while it provably still owns the lane (its session still holds the lane's lock), the
 * newer sender belongs to another outbox that uses the same identity — a database restored or cloned from this one's
 * backup, or an explicit id prefix shared by two outboxes — and the relay stops the lane instead of fencing it back.
 */
public class SenderFencedException extends OutboxException {

    private static final long serialVersionUID = 1L;

    private final String fencingId;

    /** {@code fencingId}: the identity the newer sender used (Kafka: the {@code transactional.id}). */
    public SenderFencedException(String message, String fencingId, Throwable cause) {
        super(message, cause, true);
        this.fencingId = fencingId;
    }

    public String fencingId() {
        return fencingId;
    }
}
