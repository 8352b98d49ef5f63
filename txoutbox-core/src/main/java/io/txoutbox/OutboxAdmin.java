package io.txoutbox;

import io.txoutbox.internal.config.Checks;
import io.txoutbox.internal.relay.DefaultOutboxAdmin;
import java.time.Instant;
import java.util.EnumSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import javax.sql.DataSource;

/**
 * What an operator does with events that did not go out: list and filter parked and dead events, show one, requeue
 * them or discard them; plus status views. Safe while relays run: every change is one short transaction that only
 * touches rows still in the state it expects (the relay itself only ever changes {@code PENDING} rows), and every
 * change is audited in the row ({@code operator_action}, {@code operator_name}, {@code operator_at}). The
 * {@code operator} argument names who made the change (a user name, a ticket); null records the database user.
 *
 * <pre>{@code
 * OutboxAdmin admin = OutboxAdmin.create(dataSource, OutboxSchema.defaults());
 * EventFilter filter = EventFilter.dead().topic("orders").failedFrom(yesterday);
 * List<FailedEvent> page = admin.failedEvents(filter, 0, 100);          // next page: after page's last id()
 * admin.event(eventId, false);                                         // metadata; true adds the payload
 * admin.requeue(eventId, "alice");        admin.requeue(filter, "alice");        admin.requeueAllDead("alice");
 * admin.discard(eventId, "alice");        admin.discard(filter, "alice");
 * }</pre>
 */
public interface OutboxAdmin {

    static OutboxAdmin create(DataSource dataSource, OutboxSchema schema) {
        return new DefaultOutboxAdmin(dataSource, Checks.schema("outboxAdmin", schema));
    }

    /** A key whose head event is parked; {@code waiting} later events of the key are held back behind it. */
    record ParkedKey(String key, UUID eventId, long id, String topic, String eventType, int attempts,
            String lastError, Instant createdAt, long waiting) {
    }

    /** An event in the dead state (given up by policy; its key moved on). */
    record DeadEvent(UUID eventId, long id, String key, String topic, String eventType, int attempts,
            String lastError, Instant createdAt) {
    }

    /** The states an operator works on: parked heads, dead events, and (to review, never changed) discarded ones. */
    enum FailedState {
        PARKED, DEAD, DISCARDED
    }

    /**
     * Which events an operation applies to: a set of states and optional criteria (null matches everything); time
     * bounds are {@code from} inclusive, {@code before} exclusive. {@code failed_at} is when the relay parked or
     * dead-lettered the event. Immutable; each {@code with} method returns a copy.
     */
    record EventFilter(Set<FailedState> states, String topic, String eventType, String key, Instant createdFrom,
            Instant createdBefore, Instant failedFrom, Instant failedBefore) {

        public EventFilter {
            if (states == null || states.isEmpty()) {
                throw new IllegalArgumentException("EventFilter.states must name at least one state");
            }
            states = Set.copyOf(states);
        }

        public static EventFilter dead() {
            return of(EnumSet.of(FailedState.DEAD));
        }

        public static EventFilter parked() {
            return of(EnumSet.of(FailedState.PARKED));
        }

        public static EventFilter deadOrParked() {
            return of(EnumSet.of(FailedState.DEAD, FailedState.PARKED));
        }

        public static EventFilter of(Set<FailedState> states) {
            return new EventFilter(states, null, null, null, null, null, null, null);
        }

        public EventFilter topic(String topic) {
            return new EventFilter(states, topic, eventType, key, createdFrom, createdBefore, failedFrom, failedBefore);
        }

        public EventFilter eventType(String eventType) {
            return new EventFilter(states, topic, eventType, key, createdFrom, createdBefore, failedFrom, failedBefore);
        }

        public EventFilter key(String key) {
            return new EventFilter(states, topic, eventType, key, createdFrom, createdBefore, failedFrom, failedBefore);
        }

        public EventFilter createdFrom(Instant from) {
            return new EventFilter(states, topic, eventType, key, from, createdBefore, failedFrom, failedBefore);
        }

        public EventFilter createdBefore(Instant before) {
            return new EventFilter(states, topic, eventType, key, createdFrom, before, failedFrom, failedBefore);
        }

        public EventFilter failedFrom(Instant from) {
            return new EventFilter(states, topic, eventType, key, createdFrom, createdBefore, from, failedBefore);
        }

        public EventFilter failedBefore(Instant before) {
            return new EventFilter(states, topic, eventType, key, createdFrom, createdBefore, failedFrom, before);
        }
    }

    /** One parked, dead or discarded event, with the last operator change made to it (null if none). */
    record FailedEvent(long id, UUID eventId, FailedState state, String key, String topic, String eventType,
            int attempts, String lastError, Instant createdAt, Instant failedAt, String operatorAction,
            String operatorName, Instant operatorAt) {
    }

    /**
     * One event in any state. {@code headersJson} is the headers column as JSON text; {@code payload} is null unless
     * asked for (JSON payloads as UTF-8 text, binary ones as stored).
     */
    record EventDetails(long id, UUID eventId, String state, String topic, String key, int shard,
            String aggregateType, String aggregateId, Long aggregateVersion, String eventType, String headersJson,
            Instant createdAt, int attempts, Instant nextAttemptAt, String lastError, Instant failedAt,
            Instant publishedAt, String operatorAction, String operatorName, Instant operatorAt, byte[] payload) {
    }

    /**
     * Events matching {@code filter} with {@code id > afterId}, in id order, at most {@code limit} (1 to 10,000):
     * pass the last {@code id()} of a page as {@code afterId} for the next one.
     */
    List<FailedEvent> failedEvents(EventFilter filter, long afterId, int limit);

    /** One event by id, in whatever state; the payload only when {@code withPayload}. */
    Optional<EventDetails> event(UUID eventId, boolean withPayload);

    /**
     * Makes a parked or dead event pending again with fresh attempts, due now, recording {@code operator} and the
     * time. A parked key resumes in order; a dead event's key has moved on, so it arrives after later events of its
     * key (consumers that check versions see it as stale). Returns whether the event was parked or dead.
     */
    boolean requeue(UUID eventId, String operator);

    /** {@link #requeue(UUID, String)} for every parked or dead event matching the filter; returns how many. */
    long requeue(EventFilter filter, String operator);

    /** Requeues every dead event; returns how many. */
    default long requeueAllDead(String operator) {
        return requeue(EventFilter.dead(), operator);
    }

    /**
     * Gives up on a parked or dead event for good: state {@code DISCARDED} (final; never sent, never requeued, kept
     * for audit, not removed by retention), recording {@code operator} and the time. A parked key moves on with its
     * next event. Returns whether the event was parked or dead.
     */
    boolean discard(UUID eventId, String operator);

    /** {@link #discard(UUID, String)} for every parked or dead event matching the filter; returns how many. */
    long discard(EventFilter filter, String operator);

    /** Parked keys, oldest first. */
    List<ParkedKey> parkedKeys(int limit);

    /** Dead events, oldest first. */
    List<DeadEvent> deadEvents(int limit);

    /** {@link #requeue(UUID, String)} recorded under the database user's name. */
    default boolean retryNow(UUID eventId) {
        return requeue(eventId, null);
    }

    /**
     * Gives up on a parked event (it becomes {@code DEAD}, so it can still be requeued) so its key moves on with the
     * next event; recorded as {@code SKIPPED} by {@code operator} (null: the database user).
     */
    boolean skip(UUID eventId, String operator);

    /** {@link #skip(UUID, String)} recorded under the database user's name. */
    default boolean skip(UUID eventId) {
        return skip(eventId, null);
    }

    /** Number of pending events (including those waiting behind parked keys). */
    long pendingCount();

    /**
     * One lane of the relays working this outbox, as PostgreSQL sees it: the instance holding its lock (empty when
     * nobody does), since when that session exists, and its last statement (claims and heartbeats: at least every
     * third of the lease while it owns the lane). Both times are null when the reading role may not see the relay's
     * sessions (PostgreSQL shows them to members of the relay's role and of {@code pg_read_all_stats}).
     */
    record LaneOwner(int lane, String instanceId, Instant since, Instant lastActivity) {
    }

    /** Lanes currently owned, across all relay instances of this outbox. */
    List<LaneOwner> laneOwners();

    /** Pending events per shard (only shards with pending events). */
    java.util.Map<Integer, Long> pendingByShard();

}
