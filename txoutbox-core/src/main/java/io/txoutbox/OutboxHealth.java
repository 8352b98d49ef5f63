package io.txoutbox;

import io.txoutbox.internal.config.Checks;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import javax.sql.DataSource;

/**
 * Is the outbox healthy? DOWN, with reasons, when
 * <ul>
 *   <li>a topic's oldest pending event is older than {@code maxEventAge} (the relay is down, the broker is down, or
 *       the relay cannot keep up);</li>
 *   <li>a lane of the given relay is owned but has not gone round its loop for longer than {@code maxLoopStall} (a
 *       stuck transport, a database that does not answer);</li>
 *   <li>parked keys or dead events grew since the previous check (an event failed for good: an operator must look;
 *       the check after, without further growth, is UP again);</li>
 *   <li>the outbox table cannot be read.</li>
 * </ul>
 *
 * <pre>{@code
 * OutboxHealth health = OutboxHealth.builder().dataSource(dataSource).schema(schema)
 *         .relay(relay)                              // optional: checks this instance's lanes for stalls
 *         .maxEventAge(Duration.ofMinutes(1))
 *         .build();
 * OutboxHealth.Result r = health.check();           // r.isUp(), r.reasons()
 * }</pre>
 *
 * Each check runs two short statements ({@link OutboxStatus#backlog}); call it every few seconds at most. No
 * framework needed; thread-safe.
 */
public final class OutboxHealth {

    /** {@link HealthConfig#DEFAULT_MAX_EVENT_AGE}. */
    @Deprecated(forRemoval = true)
    public static final Duration DEFAULT_MAX_EVENT_AGE = HealthConfig.DEFAULT_MAX_EVENT_AGE;
    /** {@link HealthConfig#DEFAULT_MAX_LOOP_STALL}. */
    @Deprecated(forRemoval = true)
    public static final Duration DEFAULT_MAX_LOOP_STALL = HealthConfig.DEFAULT_MAX_LOOP_STALL;

    /**
     * The outcome of one check: UP, or DOWN with the reasons.
     *
     * @param up whether the outbox is healthy (UP)
     * @param backlog what the check read; null when the table could not be read
     */
    public record Result(boolean up, List<String> reasons, Instant checkedAt, OutboxStatus.Backlog backlog) {

        public Result {
            reasons = List.copyOf(reasons);
        }

        /** {@link #up()}. */
        public boolean isUp() {
            return up;
        }

        /** {@code UP}, or {@code DOWN [reason, ...]}. */
        @Override
        public String toString() {
            return (up ? "UP" : "DOWN") + (reasons.isEmpty() ? "" : " " + reasons);
        }
    }

    private final DataSource dataSource;
    private final HealthConfig config;
    private final OutboxSchema schema;
    private final PollingRelay relay;
    private final Duration maxEventAge;
    private final Duration maxLoopStall;
    private final Clock clock;
    private long lastParked = -1;
    private long lastDead = -1;

    private OutboxHealth(Builder b, HealthConfig config) {
        this.dataSource = b.dataSource;
        this.config = config;
        this.schema = config.schema();
        this.relay = b.relay;
        this.maxEventAge = config.maxEventAge();
        this.maxLoopStall = config.maxLoopStall();
        this.clock = b.clock;
    }

    /** The thresholds this check applies. */
    public HealthConfig config() {
        return config;
    }

    public static Builder builder() {
        return new Builder();
    }

    /** Reads the backlog, looks at the relay's lanes, and says UP or DOWN with the reasons. */
    public synchronized Result check() {
        List<String> reasons = new ArrayList<>();
        Instant now = clock.instant();
        OutboxStatus.Backlog backlog = null;
        try {
            backlog = OutboxStatus.backlog(dataSource, schema);
        } catch (RuntimeException e) {
            reasons.add("cannot read the outbox " + schema + ": " + e.getMessage());
        }
        if (backlog != null) {
            for (OutboxStatus.TopicStatus t : backlog.topics()) {
                if (t.oldestPendingAge().compareTo(maxEventAge) > 0) {
                    reasons.add("topic " + t.topic() + ": the oldest of " + t.pending() + " pending events is "
                            + seconds(t.oldestPendingAge()) + " old (health.maxEventAge " + seconds(maxEventAge)
                            + ")");
                }
            }
            if (lastParked >= 0 && backlog.parkedKeys() > lastParked) {
                reasons.add("parked keys grew from " + lastParked + " to " + backlog.parkedKeys()
                        + " since the last check: see OutboxAdmin.list(EventFilter.parked(), 0, 100)");
            }
            if (lastDead >= 0 && backlog.deadEvents() > lastDead) {
                reasons.add("dead events grew from " + lastDead + " to " + backlog.deadEvents()
                        + " since the last check: see OutboxAdmin.list(EventFilter.dead(), 0, 100)");
            }
            lastParked = backlog.parkedKeys();
            lastDead = backlog.deadEvents();
        }
        if (relay != null) {
            relay.failure().ifPresent(f -> reasons.add(f.getMessage()));
            for (PollingRelay.LaneStatus lane : relay.lanes()) {
                Duration since = Duration.between(lane.lastLoopAt(), now);
                if (since.compareTo(maxLoopStall) > 0) {
                    reasons.add("relay " + relay.instanceId() + " lane " + lane.lane()
                            + " has not completed a loop for " + seconds(since) + " (health.maxLoopStall "
                            + seconds(maxLoopStall) + ")");
                }
            }
        }
        return new Result(reasons.isEmpty(), reasons, now, backlog);
    }

    private static String seconds(Duration d) {
        return String.format(Locale.ROOT, "%.1f s", d.toMillis() / 1000.0);
    }

    /** Validating builder; {@link #build()} names the property at fault. */
    public static final class Builder {
        private DataSource dataSource;
        private OutboxSchema schema = OutboxSchema.defaults();
        private PollingRelay relay;
        private Duration maxEventAge = HealthConfig.DEFAULT_MAX_EVENT_AGE;
        private Duration maxLoopStall = HealthConfig.DEFAULT_MAX_LOOP_STALL;
        private Clock clock = Clock.systemUTC();

        private Builder() {
        }

        /** Where the outbox table is read; any pool will do (two short statements per check). */
        public Builder dataSource(DataSource dataSource) {
            this.dataSource = dataSource;
            return this;
        }

        /** Where the outbox is, default {@link OutboxSchema#defaults()}; {@code null} is refused here. */
        public Builder schema(OutboxSchema schema) {
            this.schema = Checks.schema("health", schema);
            return this;
        }

        /** A relay of this JVM whose lanes are checked for stalls; optional. */
        public Builder relay(PollingRelay relay) {
            this.relay = relay;
            return this;
        }

        /** DOWN when a topic's oldest pending event is older; default {@link HealthConfig#DEFAULT_MAX_EVENT_AGE}. */
        public Builder maxEventAge(Duration maxEventAge) {
            this.maxEventAge = maxEventAge;
            return this;
        }

        /**
         * DOWN when an owned lane has not gone round its loop for longer; default {@link HealthConfig#DEFAULT_MAX_LOOP_STALL}.
         * Keep it above the relay's {@code sendTimeout} and {@code outageBackoffMax}.
         */
        public Builder maxLoopStall(Duration maxLoopStall) {
            this.maxLoopStall = maxLoopStall;
            return this;
        }

        /** The clock lanes' loop times are compared with (the JVM's); for tests. */
        public Builder clock(Clock clock) {
            this.clock = clock;
            return this;
        }

        /**
         * Applies settings by their names in {@link HealthConfig#DESCRIPTOR} ({@code "max-event-age"} or
         * {@code "txoutbox.health.max-event-age"}), as text or typed values; a bad one changes nothing.
         */
        public Builder settings(java.util.Map<String, ?> settings) {
            return HealthConfig.DESCRIPTOR.apply(this, settings);
        }

        public OutboxHealth build() {
            if (dataSource == null) {
                throw new InvalidConfigurationException("health.dataSource is required: the check reads the outbox "
                        + "table");
            }
            Objects.requireNonNull(clock, "health.clock must not be null");
            HealthConfig config = new HealthConfig(schema, maxEventAge, maxLoopStall);
            if (relay != null && maxLoopStall.compareTo(relay.config().sendTimeout()) <= 0) {
                throw Checks.invalid("health.maxLoopStall", "(" + maxLoopStall + ") must be longer than the relay's "
                        + "sendTimeout (" + relay.config().sendTimeout() + "): a healthy lane may wait that long for "
                        + "one batch");
            }
            return new OutboxHealth(this, config);
        }
    }
}
