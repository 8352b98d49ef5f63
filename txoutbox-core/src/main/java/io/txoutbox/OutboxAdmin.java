package io.txoutbox;

import io.txoutbox.internal.config.Checks;
import io.txoutbox.internal.relay.DefaultOutboxAdmin;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import javax.sql.DataSource;

/**
 * What an operator does with outbox events that did not go out: list and filter parked, dead and discarded events,
 * show one, requeue, discard, or skip a parked key. {@link InboxAdmin} has the same verbs for the inbox; the status
 * views (pending counts, lane owners) are {@link OutboxStatus}'s. Safe while relays run: every change is one short
 * transaction that only touches rows still in the state it expects (the relay itself only ever changes
 * {@code PENDING} rows), and every change is audited in the row ({@code operator_action}, {@code operator_name},
 * {@code operator_at}). The {@code operator} argument names who made the change (a user name, a ticket); null
 * records the database user.
 *
 * <pre>{@code
 * OutboxAdmin admin = OutboxAdmin.create(dataSource, OutboxSchema.defaults());
 * EventFilter filter = EventFilter.dead().topic("orders").failedFrom(yesterday);
 * List<FailedEvent> page = admin.list(filter, 0, 100);            // next page: after page's last id()
 * admin.show(eventId, false);                                     // metadata; true adds the payload
 * admin.requeue(eventId, "alice");        admin.requeue(filter, "alice");
 * admin.discard(eventId, "alice");        admin.discard(filter, "alice");
 * admin.skip(eventId, "alice");                                   // a parked head becomes DEAD, its key moves on
 * }</pre>
 */
public interface OutboxAdmin {

    static OutboxAdmin create(DataSource dataSource, OutboxSchema schema) {
        return new DefaultOutboxAdmin(dataSource, Checks.schema("outboxAdmin", schema));
    }

    /**
     * Events matching {@code filter} (which names no consumer) with {@code id > afterId}, in id order, at most
     * {@code limit} (1 to 10,000): pass the last {@code id()} of a page as {@code afterId} for the next one.
     */
    List<FailedEvent> list(EventFilter filter, long afterId, int limit);

    /** One event by id, in whatever state; the payload only when {@code withPayload}. */
    Optional<EventDetails> show(UUID eventId, boolean withPayload);

    /**
     * Makes a parked or dead event pending again with fresh attempts, due now, recording {@code operator} and the
     * time. A parked key resumes in order; a dead event's key has moved on, so it arrives after later events of its
     * key (consumers that check versions see it as stale). Returns whether the event was parked or dead.
     */
    boolean requeue(UUID eventId, String operator);

    /** {@link #requeue(UUID, String)} for every parked or dead event matching the filter; returns how many. */
    long requeue(EventFilter filter, String operator);

    /**
     * Gives up on a parked or dead event for good: state {@code DISCARDED} (final; never sent, never requeued, kept
     * for audit, not removed by retention), recording {@code operator} and the time. A parked key moves on with its
     * next event. Returns whether the event was parked or dead.
     */
    boolean discard(UUID eventId, String operator);

    /** {@link #discard(UUID, String)} for every parked or dead event matching the filter; returns how many. */
    long discard(EventFilter filter, String operator);

    /**
     * Releases a parked key: its head event becomes {@code DEAD} (so it can still be requeued) and the key moves on
     * with its next event; recorded as {@code SKIPPED}. Returns whether the event was parked.
     */
    boolean skip(UUID eventId, String operator);
}
