package io.txoutbox;

import io.txoutbox.internal.config.Checks;
import io.txoutbox.internal.inbox.DefaultInboxAdmin;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import javax.sql.DataSource;

/**
 * What an operator does with inbox events that were not processed — the verbs of {@link OutboxAdmin}, per consumer —
 * and retention of what was. Safe while workers run: every change is one short transaction that only touches rows
 * still in the state it expects (the worker only changes {@code PENDING} rows), audited in the row
 * ({@code operator_action}, {@code operator_name}, {@code operator_at}; schema V10). {@code operator} names who made
 * the change; null records the database user. A filter must name its consumer ({@link EventFilter#consumer}).
 *
 * <pre>{@code
 * InboxAdmin admin = InboxAdmin.create(dataSource, OutboxSchema.defaults());
 * EventFilter billing = EventFilter.parked().consumer("billing");
 * admin.list(billing, 0, 100);                 // next page: after page's last id()
 * admin.show("billing", eventId, true);
 * admin.requeue("billing", eventId, "alice");  admin.requeue(billing, "alice");
 * admin.discard("billing", eventId, "alice");  admin.discard(billing, "alice");
 * admin.skip("billing", eventId, "alice");     // a parked head becomes DEAD, its key moves on
 * admin.purge(Duration.ofDays(7), Duration.ofDays(7), 1_000);   // from a daily job
 * admin.backlog();                             // per consumer: pending, oldest pending age, parked keys, dead events
 * }</pre>
 */
public interface InboxAdmin {

    static InboxAdmin create(DataSource dataSource, OutboxSchema schema) {
        return new DefaultInboxAdmin(dataSource, Checks.schema("inboxAdmin", schema));
    }

    /**
     * One consumer's backlog, as {@link #backlog()} read it (the database's clock).
     *
     * @param pending          pending events (including those waiting behind a parked key or backing off)
     * @param oldestPendingAge age of the oldest pending event, from its {@code received_at}; zero when none
     * @param parkedKeys       keys whose head event is parked
     * @param deadEvents       events given up by the failure policy or skipped by an operator
     */
    record ConsumerBacklog(String consumer, long pending, Duration oldestPendingAge, long parkedKeys,
            long deadEvents) {
    }

    /** What {@link #purge} deleted. */
    record Purged(long processedEvents, long inboxEvents) {
    }

    /**
     * The filter's consumer's events matching it with {@code id > afterId}, in id order, at most {@code limit} (1 to
     * 10,000): pass the last {@code id()} of a page as {@code afterId} for the next one.
     */
    List<FailedEvent> list(EventFilter filter, long afterId, int limit);

    /** One event of {@code consumer} by id, in whatever state; the payload only when {@code withPayload}. */
    Optional<EventDetails> show(String consumer, UUID eventId, boolean withPayload);

    /**
     * Makes a parked or dead event pending again with fresh attempts, due now. A parked key resumes in order; a dead
     * event is processed after later events of its key. Returns whether the event was parked or dead.
     */
    boolean requeue(String consumer, UUID eventId, String operator);

    /** {@link #requeue(String, UUID, String)} for every parked or dead event matching the filter; returns how many. */
    long requeue(EventFilter filter, String operator);

    /**
     * Gives up on a parked or dead event for good: state {@code DISCARDED} (final; never processed, never requeued,
     * never purged). A parked key moves on with its next event. Returns whether the event was parked or dead.
     */
    boolean discard(String consumer, UUID eventId, String operator);

    /** {@link #discard(String, UUID, String)} for every parked or dead event matching the filter; returns how many. */
    long discard(EventFilter filter, String operator);

    /**
     * Releases a parked key: its head event becomes {@code DEAD} (it can still be requeued) and the key moves on;
     * recorded as {@code SKIPPED}. Returns whether the event was parked.
     */
    boolean skip(String consumer, UUID eventId, String operator);

    /** Pending inbox events of the consumer (including those waiting behind parked keys). */
    long pendingCount(String consumer);

    /**
     * Every consumer that has pending, parked or dead events, by name: what gauges and status pages sample (two
     * statements, through the pending index and the index of parked, dead and discarded rows (schema V10), each
     * bounded by a 10 s statement timeout). Sample it every few seconds, not per event: a large backlog is a large
     * index range.
     */
    List<ConsumerBacklog> backlog();

    /**
     * Deletes, for all consumers, {@code processed_event} rows older than {@code processedEventRetention} and
     * processed inbox rows processed longer ago than {@code inboxRetention}, in transactions of at most
     * {@code batchSize} rows each, until none is left. Pending, parked, dead and discarded inbox rows and
     * {@code applied_version} rows are never deleted. A redelivery of an event older than the retention is no longer
     * recognised as a duplicate; only a version check ({@link Inbox#once} with a version) still rejects it.
     * Ages are measured with the database's clock.
     */
    Purged purge(Duration processedEventRetention, Duration inboxRetention, int batchSize);
}
