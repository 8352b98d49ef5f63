package io.txoutbox;

import io.txoutbox.internal.relay.DefaultOutboxAdmin;
import java.time.Instant;
import java.util.List;
import java.util.UUID;
import javax.sql.DataSource;

/**
 * What an operator does with events that did not go out: list parked keys and dead events, retry a parked or dead
 * event now, or skip a parked one so its key moves on. Safe while relays run: every change is one short transaction
 * that only touches rows still in the state it expects.
 *
 * <pre>{@code
 * OutboxAdmin admin = OutboxAdmin.create(dataSource, OutboxSchema.defaults());
 * for (OutboxAdmin.ParkedKey p : admin.parkedKeys(100)) {
 *     log.info("{} parked at {}: {}", p.key(), p.eventId(), p.lastError());
 * }
 * admin.retryNow(eventId);   // or admin.skip(eventId)
 * }</pre>
 */
public interface OutboxAdmin {

    static OutboxAdmin create(DataSource dataSource, OutboxSchema schema) {
        return new DefaultOutboxAdmin(dataSource, schema);
    }

    /** A key whose head event is parked; {@code waiting} later events of the key are held back behind it. */
    record ParkedKey(String key, UUID eventId, long id, String topic, String eventType, int attempts,
            String lastError, Instant createdAt, long waiting) {
    }

    /** An event in the dead state (given up by policy; its key moved on). */
    record DeadEvent(UUID eventId, long id, String key, String topic, String eventType, int attempts,
            String lastError, Instant createdAt) {
    }

    /** Parked keys, oldest first. */
    List<ParkedKey> parkedKeys(int limit);

    /** Dead events, oldest first. */
    List<DeadEvent> deadEvents(int limit);

    /**
     * Makes a parked or dead event pending again with fresh attempts, due now. A parked key resumes in order. A dead
     * event's key has moved on, so the retried event arrives after later events of its key: consumers that check
     * versions will see it as stale. Returns whether the event was parked or dead.
     */
    boolean retryNow(UUID eventId);

    /** Gives up on a parked event (it becomes dead) so its key moves on with the next event. */
    boolean skip(UUID eventId);

    /** Number of pending events (including those waiting behind parked keys). */
    long pendingCount();

    /**
     * One lane of the relays working this outbox, as PostgreSQL sees it: the instance holding its lock (empty when
     * nobody does), since when that session exists, and its last statement (claims and heartbeats: at least every
     * third of the lease while it owns the lane).
     */
    record LaneOwner(int lane, String instanceId, Instant since, Instant lastActivity) {
    }

    /** Lanes currently owned, across all relay instances of this outbox. */
    List<LaneOwner> laneOwners();

    /** Pending events per shard (only shards with pending events). */
    java.util.Map<Integer, Long> pendingByShard();
}
