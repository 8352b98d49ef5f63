package io.txoutbox;

import io.txoutbox.internal.config.Checks;
import io.txoutbox.internal.inbox.DefaultInboxAdmin;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.UUID;
import javax.sql.DataSource;

/**
 * What an operator does with inbox events that were not processed, and retention of what was.
 *
 * <pre>{@code
 * InboxAdmin admin = InboxAdmin.create(dataSource, OutboxSchema.defaults());
 * admin.parkedKeys("billing", 100);
 * admin.retryNow("billing", eventId);      // or admin.skip("billing", eventId)
 * admin.purge(Duration.ofDays(7), Duration.ofDays(7), 1_000);   // from a daily job
 * admin.backlog();                          // per consumer: pending, oldest pending age, parked keys, dead events
 * }</pre>
 */
public interface InboxAdmin {

    static InboxAdmin create(DataSource dataSource, OutboxSchema schema) {
        return new DefaultInboxAdmin(dataSource, Checks.schema("inboxAdmin", schema));
    }

    /** A key whose head event is parked, with the number of later events of the key waiting behind it. */
    record ParkedKey(String consumer, String key, UUID eventId, String eventType, int attempts, String lastError,
            Instant receivedAt, long waiting) {
    }

    /** An event given up by policy (its key moved on). */
    record DeadEvent(String consumer, UUID eventId, String key, String eventType, int attempts, String lastError,
            Instant receivedAt) {
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

    List<ParkedKey> parkedKeys(String consumer, int limit);

    List<DeadEvent> deadEvents(String consumer, int limit);

    /**
     * Makes a parked or dead event pending again with fresh attempts, due now. A parked key resumes in order; a dead
     * event is processed after later events of its key. Returns whether the event was parked or dead.
     */
    boolean retryNow(String consumer, UUID eventId);

    /** Gives up on a parked event (it becomes dead) so its key moves on. */
    boolean skip(String consumer, UUID eventId);

    /** Pending inbox events of the consumer (including those waiting behind parked keys). */
    long pendingCount(String consumer);

    /**
     * Every consumer that has pending, parked or dead events, by name: what gauges and status pages sample (two
     * statements, through the pending index and the index of parked and dead rows (schema V5), each bounded by a
     * 10 s statement timeout). Sample it every few seconds, not per event: a large backlog is a large index range.
     */
    List<ConsumerBacklog> backlog();

    /**
     * Deletes, for all consumers, {@code processed_event} rows older than {@code processedEventRetention} and
     * processed inbox rows processed longer ago than {@code inboxRetention}, in transactions of at most
     * {@code batchSize} rows each, until none is left. Pending, parked and dead inbox rows and
     * {@code applied_version} rows are never deleted. A redelivery of an event older than the retention is no longer
     * recognised as a duplicate; only a version check ({@link Inbox#once} with a version) still rejects it.
     * Ages are measured with the database's clock.
     */
    Purged purge(Duration processedEventRetention, Duration inboxRetention, int batchSize);
}
