package io.txoutbox;

import io.txoutbox.internal.config.Checks;
import io.txoutbox.internal.config.DescriptorBuilder;
import java.time.Duration;

/**
 * The health check's thresholds, validated and immutable; see {@link OutboxHealth.Builder}. The DataSource, the relay
 * checked and the Clock are dependencies, not settings: they stay in the builder.
 */
public record HealthConfig(OutboxSchema schema, Duration maxEventAge, Duration maxLoopStall) {

    /** Default: alert when an event waits longer than this. */
    public static final Duration DEFAULT_MAX_EVENT_AGE = Duration.ofMinutes(5);
    /**
     * Default: a lane is stuck when it has not gone round its loop for this long. Above the relay's default
     * {@code sendTimeout} (30 s), the longest a healthy lane waits for one batch.
     */
    public static final Duration DEFAULT_MAX_LOOP_STALL = Duration.ofSeconds(60);

    /** Every setting of the health check ({@code txoutbox.health.*}). */
    public static final ConfigDescriptor<OutboxHealth.Builder, HealthConfig> DESCRIPTOR =
            DescriptorBuilder.<OutboxHealth.Builder, HealthConfig>define("health")
                    .add("maxEventAge", Duration.class, DEFAULT_MAX_EVENT_AGE, "", "DOWN when a topic's oldest "
                            + "pending event is older", OutboxHealth.Builder::maxEventAge, HealthConfig::maxEventAge)
                    .add("maxLoopStall", Duration.class, DEFAULT_MAX_LOOP_STALL, "", "DOWN when an owned lane has "
                            + "not gone round its loop for longer; above the relay's send-timeout",
                            OutboxHealth.Builder::maxLoopStall, HealthConfig::maxLoopStall)
                    .build();

    public HealthConfig {
        Checks.schema("health", schema);
        Checks.positive("health.maxEventAge", maxEventAge);
        Checks.positive("health.maxLoopStall", maxLoopStall);
    }
}
