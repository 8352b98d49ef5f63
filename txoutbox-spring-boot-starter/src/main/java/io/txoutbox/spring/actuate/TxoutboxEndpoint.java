package io.txoutbox.spring.actuate;

import io.txoutbox.EventDetails;
import io.txoutbox.EventFilter;
import io.txoutbox.FailedEvent;
import io.txoutbox.FailedState;
import io.txoutbox.OutboxAdmin;
import io.txoutbox.OutboxSchema;
import io.txoutbox.OutboxStatus;
import io.txoutbox.PollingRelay;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.security.Principal;
import java.time.Duration;
import java.time.Instant;
import java.util.Base64;
import java.util.Collection;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;
import org.springframework.boot.actuate.endpoint.Access;
import org.springframework.boot.actuate.endpoint.InvalidEndpointRequestException;
import org.springframework.boot.actuate.endpoint.SecurityContext;
import org.springframework.boot.actuate.endpoint.Show;
import org.springframework.boot.actuate.endpoint.annotation.Endpoint;
import org.springframework.boot.actuate.endpoint.annotation.ReadOperation;
import org.springframework.boot.actuate.endpoint.annotation.Selector;
import org.springframework.boot.actuate.endpoint.annotation.WriteOperation;

/**
 * The Actuator endpoint {@code txoutbox}: the outbox's status, its parked, dead and discarded events, one event's
 * details, and the operator's changes (requeue, discard, skip) through core's {@link OutboxAdmin} and
 * {@link OutboxStatus} on the outbox's DataSource.
 *
 * <pre>
 * GET  /actuator/txoutbox                                  status: backlog per topic, oldest pending age, parked
 *                                                          keys, dead events, lane owners
 * GET  /actuator/txoutbox/{state}?after=&amp;limit=            parked, dead or discarded events, in id order, a page
 *      [&amp;topic=&amp;eventType=&amp;key=]                           of at most 500; the next page: after = nextAfter
 * GET  /actuator/txoutbox/events/{eventId}[?payload=true]  one event in any state, without its payload unless asked
 *                                                          for and allowed (management.endpoint.txoutbox.show-payload)
 * POST /actuator/txoutbox/events/{eventId}/{action}        requeue, discard or skip; body {"reason": "..."}
 * </pre>
 *
 * <p>Its default access is {@link Access#READ_ONLY}: Actuator does not expose the write operation (over HTTP or JMX)
 * unless {@code management.endpoint.txoutbox.access=unrestricted}. That access model applies to Actuator's exposure
 * only; a direct Java call of {@link #change} on this bean is not checked. Every change is audited in the row by the
 * admin ({@code operator_action}, {@code operator_at}, and {@code operator_name}: the caller's principal, or
 * {@code actuator} without one, then the reason).
 */
@Endpoint(id = "txoutbox", defaultAccess = Access.READ_ONLY)
public class TxoutboxEndpoint {

    /** The largest page {@link #events} returns; a larger {@code limit} is capped to it. */
    public static final int MAX_LIMIT = 500;
    /** The page size without a {@code limit}. */
    public static final int DEFAULT_LIMIT = 100;
    /** The first selector of {@link #event} and {@link #change}: {@code /actuator/txoutbox/events/{eventId}}. */
    public static final String EVENTS = "events";
    /** What core's admin accepts as an operator name; the principal, ": " and the reason must fit. */
    static final int MAX_OPERATOR_LENGTH = 200;

    private final DataSource dataSource;
    private final OutboxSchema schema;
    private final OutboxAdmin admin;
    private final @Nullable PollingRelay relay;
    private final Show showPayload;
    private final Set<String> roles;

    /**
     * @param relay       this application's relay, or null when it runs none
     * @param showPayload when {@code payload=true} may return an event's payload (never by default)
     * @param roles       the roles that {@link Show#WHEN_AUTHORIZED} requires (any role when empty)
     */
    public TxoutboxEndpoint(DataSource dataSource, OutboxSchema schema, @Nullable PollingRelay relay,
            Show showPayload, Collection<String> roles) {
        this.dataSource = Objects.requireNonNull(dataSource, "dataSource");
        this.schema = Objects.requireNonNull(schema, "schema");
        this.admin = OutboxAdmin.create(dataSource, schema);
        this.relay = relay;
        this.showPayload = Objects.requireNonNull(showPayload, "showPayload");
        this.roles = Set.copyOf(roles);
    }

    /** {@code GET /actuator/txoutbox}: the outbox's status now (four short statements). */
    @ReadOperation
    public StatusView status() {
        OutboxStatus s = OutboxStatus.snapshot(dataSource, schema);
        return new StatusView(text(s.takenAt()), s.pending(), text(s.oldestPendingAge()), s.parkedKeys(),
                s.deadEvents(),
                s.backlog().topics().stream()
                        .map(t -> new TopicView(t.topic(), t.pending(), text(t.oldestPendingAge()))).toList(),
                s.lanes().stream().map(l -> new LaneView(l.lane(), l.instanceId(), text(l.since()),
                        text(l.lastActivity()))).toList(),
                s.shards().stream().map(sh -> new ShardView(sh.shard(), sh.pending(), text(sh.oldestPendingAge())))
                        .toList(),
                s.partitions().stream().map(p -> new PartitionView(p.name(), text(p.from()), text(p.to()), p.rows(),
                        p.isDefault())).toList(),
                relayView());
    }

    /**
     * {@code GET /actuator/txoutbox/{state}}: a page of the parked, dead or discarded events with {@code id > after},
     * in id order, at most {@code limit} (default 100, capped at 500), optionally of one topic, event type or key.
     */
    @ReadOperation
    public EventPage events(@Selector String state, @Nullable Long after, @Nullable Integer limit,
            @Nullable String topic, @Nullable String eventType, @Nullable String key) {
        FailedState failedState = state(state);
        long afterId = after == null ? 0 : after;
        if (afterId < 0) {
            throw new InvalidEndpointRequestException("after must be an event's id() (0 or more), was " + afterId,
                    "after must be 0 or more");
        }
        int requested = limit == null ? DEFAULT_LIMIT : limit;
        if (requested < 1) {
            throw new InvalidEndpointRequestException("limit must be 1 or more (at most " + MAX_LIMIT + " are"
                    + " returned), was " + requested, "limit must be 1 or more");
        }
        int pageSize = Math.min(requested, MAX_LIMIT);
        EventFilter filter = EventFilter.of(Set.of(failedState));
        if (topic != null) {
            filter = filter.topic(topic);
        }
        if (eventType != null) {
            filter = filter.eventType(eventType);
        }
        if (key != null) {
            filter = filter.key(key);
        }
        List<FailedEvent> page = admin.list(filter, afterId, pageSize);
        List<FailedEventView> events = page.stream().map(TxoutboxEndpoint::view).toList();
        Long next = page.size() == pageSize ? page.get(page.size() - 1).id() : null;
        return new EventPage(failedState.name(), afterId, pageSize, events, next);
    }

    /**
     * {@code GET /actuator/txoutbox/events/{eventId}}: one event in any state with its last error and audit, or
     * nothing (404) when there is no such event. The payload only with {@code payload=true} and when
     * {@code management.endpoint.txoutbox.show-payload} allows it for the caller.
     */
    @ReadOperation
    public @Nullable EventView event(@Selector String events, @Selector String eventId, @Nullable Boolean payload,
            SecurityContext securityContext) {
        requireEvents(events, eventId);
        UUID id = eventId(eventId);
        boolean withPayload = Boolean.TRUE.equals(payload);
        if (withPayload && !showPayload.isShown(securityContext, roles)) {
            throw new InvalidEndpointRequestException("the payload is not shown to this caller"
                    + " (management.endpoint.txoutbox.show-payload is " + showPayload.name().toLowerCase(Locale.ROOT)
                    + "): leave out payload=true, or set management.endpoint.txoutbox.show-payload=when-authorized"
                    + " (with management.endpoint.txoutbox.roles) or always", "the payload is not shown");
        }
        return admin.show(id, withPayload).map(TxoutboxEndpoint::view).orElse(null);
    }

    /**
     * {@code POST /actuator/txoutbox/events/{eventId}/{action}} with {@code {"reason": "..."}}: {@code requeue} (a
     * parked or dead event becomes pending, due now), {@code discard} (final, never sent) or {@code skip} (a parked
     * head becomes dead, its key moves on). Exposed by Actuator only with
     * {@code management.endpoint.txoutbox.access=unrestricted}. The reason is required and recorded with the
     * caller's principal as the row's {@code operator_name}.
     */
    @WriteOperation
    public ChangeView change(@Selector String events, @Selector String eventId, @Selector String action,
            String reason, SecurityContext securityContext) {
        requireEvents(events, eventId);
        UUID id = eventId(eventId);
        Action verb = action(action);
        String operator = operator(securityContext, reason);
        boolean changed;
        try {
            changed = switch (verb) {
                case REQUEUE -> admin.requeue(id, operator);
                case DISCARD -> admin.discard(id, operator);
                case SKIP -> admin.skip(id, operator);
            };
        } catch (IllegalArgumentException e) {
            throw new InvalidEndpointRequestException(e.getMessage(), e.getMessage(), e);
        }
        Optional<EventDetails> now = admin.show(id, false);
        String state = now.map(EventDetails::state).orElse(null);
        String message;
        if (changed) {
            message = verb.done + " by " + operator;
        } else if (now.isEmpty()) {
            message = "no outbox event " + id;
        } else {
            message = "event " + id + " is " + state + ": " + verb.verb + " applies to " + verb.applies
                    + " events only; nothing changed";
        }
        return new ChangeView(id.toString(), verb.verb, changed, state, changed ? operator : null, message);
    }

    private @Nullable RelayView relayView() {
        if (relay == null) {
            return null;
        }
        return new RelayView(relay.instanceId(), relay.config().lanes(), relay.lanes().size(),
                relay.failure().map(Throwable::getMessage).orElse(null));
    }

    private static FailedState state(String state) {
        for (FailedState s : FailedState.values()) {
            if (s.name().equalsIgnoreCase(state)) {
                return s;
            }
        }
        throw new InvalidEndpointRequestException("unknown list '" + state + "': use /actuator/txoutbox/parked, "
                + "/dead or /discarded (or /actuator/txoutbox/events/{eventId} for one event)", "unknown list");
    }

    private static void requireEvents(String events, String eventId) {
        if (!EVENTS.equals(events)) {
            throw new InvalidEndpointRequestException("unknown path '" + events + "/" + eventId + "': one event is "
                    + "/actuator/txoutbox/events/{eventId}", "unknown path");
        }
    }

    private static UUID eventId(String eventId) {
        try {
            return UUID.fromString(eventId);
        } catch (IllegalArgumentException e) {
            throw new InvalidEndpointRequestException("eventId must be an event's UUID (event_id), was '" + eventId
                    + "'", "eventId must be a UUID");
        }
    }

    private static Action action(String action) {
        for (Action a : Action.values()) {
            if (a.verb.equals(action)) {
                return a;
            }
        }
        throw new InvalidEndpointRequestException("unknown action '" + action + "': requeue, discard or skip",
                "unknown action");
    }

    /** The audit's operator name: who ({@code actuator} without a principal), then the reason. */
    static String operator(SecurityContext securityContext, @Nullable String reason) {
        if (reason == null || reason.isBlank()) {
            throw new InvalidEndpointRequestException("reason is required: say why (a ticket, what was fixed); it"
                    + " is recorded with the change", "reason is required");
        }
        Principal principal = securityContext == null ? null : securityContext.getPrincipal();
        String who = principal == null || principal.getName() == null || principal.getName().isBlank() ? "actuator"
                : principal.getName();
        String operator = who + ": " + reason.strip();
        if (operator.length() > MAX_OPERATOR_LENGTH || operator.chars().anyMatch(Character::isISOControl)) {
            throw new InvalidEndpointRequestException("reason must be printable on one line and at most "
                    + Math.max(1, MAX_OPERATOR_LENGTH - who.length() - 2) + " characters (recorded as '" + who
                    + ": <reason>' in operator_name), was " + reason.strip().length() + " characters",
                    "reason too long or not printable");
        }
        return operator;
    }

    private static FailedEventView view(FailedEvent e) {
        return new FailedEventView(e.id(), e.eventId().toString(), e.state().name(), e.topic(), e.key(),
                e.eventType(), e.attempts(), e.lastError(), text(e.createdAt()), text(e.failedAt()), e.waiting(),
                e.operatorAction(), e.operatorName(), text(e.operatorAt()));
    }

    private static EventView view(EventDetails e) {
        String payload = null;
        String encoding = null;
        if (e.payload() != null) {
            try {
                payload = StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
                        .onUnmappableCharacter(CodingErrorAction.REPORT).decode(ByteBuffer.wrap(e.payload()))
                        .toString();
                encoding = "utf-8";
            } catch (CharacterCodingException notText) {
                payload = Base64.getEncoder().encodeToString(e.payload());
                encoding = "base64";
            }
        }
        return new EventView(e.id(), e.eventId().toString(), e.state(), e.topic(), e.key(), e.shard(),
                e.aggregateType(), e.aggregateId(), e.aggregateVersion(), e.eventType(), e.headersJson(),
                text(e.createdAt()), e.attempts(), text(e.nextAttemptAt()), e.lastError(), text(e.failedAt()),
                text(e.completedAt()), e.operatorAction(), e.operatorName(), text(e.operatorAt()), payload, encoding);
    }

    private static @Nullable String text(@Nullable Instant instant) {
        return instant == null ? null : instant.toString();
    }

    private static @Nullable String text(@Nullable Duration duration) {
        return duration == null ? null : duration.toString();
    }

    private enum Action {
        REQUEUE("requeue", "requeued", "parked or dead"),
        DISCARD("discard", "discarded", "parked or dead"),
        SKIP("skip", "skipped", "parked");

        final String verb;
        final String done;
        final String applies;

        Action(String verb, String done, String applies) {
            this.verb = verb;
            this.done = done;
            this.applies = applies;
        }
    }

    /**
     * The status: times in ISO-8601 (database clock), ages as ISO-8601 durations. {@code relay} is this
     * application's relay (null when it runs none); {@code lanes} are the lanes owned now across all instances.
     */
    public record StatusView(String takenAt, long pending, String oldestPendingAge, long parkedKeys, long deadEvents,
            List<TopicView> topics, List<LaneView> lanes, List<ShardView> shards, List<PartitionView> partitions,
            @Nullable RelayView relay) {
    }

    public record TopicView(String topic, long pending, String oldestPendingAge) {
    }

    public record LaneView(int lane, String instanceId, @Nullable String since, @Nullable String lastActivity) {
    }

    public record ShardView(int shard, long pending, String oldestPendingAge) {
    }

    public record PartitionView(String name, @Nullable String from, @Nullable String to, long rows,
            boolean isDefault) {
    }

    public record RelayView(String instanceId, int lanes, int lanesOwnedHere, @Nullable String stopped) {
    }

    /** A page of events; {@code nextAfter} is the {@code after} of the next page, null on the last one. */
    public record EventPage(String state, long after, int limit, List<FailedEventView> events,
            @Nullable Long nextAfter) {
    }

    public record FailedEventView(long id, String eventId, String state, String topic, String key, String eventType,
            int attempts, @Nullable String lastError, String createdAt, @Nullable String failedAt, long waiting,
            @Nullable String operatorAction, @Nullable String operatorName, @Nullable String operatorAt) {
    }

    /** One event; {@code payload} only when asked for and allowed, {@code payloadEncoding} utf-8 or base64. */
    public record EventView(long id, String eventId, String state, String topic, String key, int shard,
            String aggregateType, String aggregateId, @Nullable Long aggregateVersion, String eventType,
            @Nullable String headersJson, String createdAt, int attempts, @Nullable String nextAttemptAt,
            @Nullable String lastError, @Nullable String failedAt, @Nullable String completedAt,
            @Nullable String operatorAction, @Nullable String operatorName, @Nullable String operatorAt,
            @Nullable String payload, @Nullable String payloadEncoding) {
    }

    /** The outcome of a change: whether it applied, the event's state now, and the operator name recorded. */
    public record ChangeView(String eventId, String action, boolean changed, @Nullable String state,
            @Nullable String operator, String message) {
    }
}
