package io.txoutbox;

import java.time.Instant;
import java.util.EnumSet;
import java.util.Set;

/**
 * Which events an operator's list or change applies to, in {@link OutboxAdmin} and {@link InboxAdmin}: a set of
 * states and optional criteria (null matches everything). Time bounds are {@code from} inclusive, {@code before}
 * exclusive; {@code failed} is when the relay or the inbox worker parked or gave up the event, {@code created} is the
 * outbox's {@code created_at} and the inbox's {@code received_at}; {@code topic} is the inbox's {@code source_topic}.
 * {@code consumer} is required by the inbox's filter verbs and refused by the outbox's. Immutable: each criterion
 * method returns a copy.
 */
public record EventFilter(Set<FailedState> states, String consumer, String topic, String eventType, String key,
        Instant createdFrom, Instant createdBefore, Instant failedFrom, Instant failedBefore) {

    public EventFilter {
        if (states == null || states.isEmpty() || states.stream().anyMatch(s -> s == null)) {
            throw new IllegalArgumentException("EventFilter.states must name at least one state (PARKED, DEAD or"
                    + " DISCARDED), was " + states + ": start from EventFilter.dead(), parked() or of(states)");
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
        return new EventFilter(states, null, null, null, null, null, null, null, null);
    }

    /** Only this inbox consumer's events (the inbox's filter verbs need it; the outbox has no consumers). */
    public EventFilter consumer(String consumer) {
        return new EventFilter(states, consumer, topic, eventType, key, createdFrom, createdBefore, failedFrom,
                failedBefore);
    }

    public EventFilter topic(String topic) {
        return new EventFilter(states, consumer, topic, eventType, key, createdFrom, createdBefore, failedFrom,
                failedBefore);
    }

    public EventFilter eventType(String eventType) {
        return new EventFilter(states, consumer, topic, eventType, key, createdFrom, createdBefore, failedFrom,
                failedBefore);
    }

    /** Only events of this partition key (as the inbox lists it: its text form). */
    public EventFilter key(String key) {
        return new EventFilter(states, consumer, topic, eventType, key, createdFrom, createdBefore, failedFrom,
                failedBefore);
    }

    public EventFilter createdFrom(Instant from) {
        return new EventFilter(states, consumer, topic, eventType, key, from, createdBefore, failedFrom, failedBefore);
    }

    public EventFilter createdBefore(Instant before) {
        return new EventFilter(states, consumer, topic, eventType, key, createdFrom, before, failedFrom, failedBefore);
    }

    public EventFilter failedFrom(Instant from) {
        return new EventFilter(states, consumer, topic, eventType, key, createdFrom, createdBefore, from, failedBefore);
    }

    public EventFilter failedBefore(Instant before) {
        return new EventFilter(states, consumer, topic, eventType, key, createdFrom, createdBefore, failedFrom, before);
    }
}
