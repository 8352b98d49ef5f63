package io.txoutbox;

import io.txoutbox.OutboxReplay.WhenUnpublished;
import io.txoutbox.internal.config.Checks;
import io.txoutbox.internal.config.DescriptorBuilder;
import java.time.Duration;
import java.time.Instant;

/**
 * A replay's validated, immutable configuration: its name, the range and filters, and how it sends; see
 * {@link OutboxReplay.Builder} for what each value does. The DataSource and the Transport are dependencies, not
 * settings: they stay in the builder. Null filters match every event; {@code createdFrom} and {@code createdTo} are
 * both null or both set ({@code [from, to)}).
 */
public record ReplayConfig(
        OutboxSchema schema,
        String name,
        String toTopic,
        String topic,
        String aggregateType,
        String aggregateId,
        String eventType,
        Instant createdFrom,
        Instant createdTo,
        long idFrom,
        long idTo,
        double maxRate,
        int batchSize,
        Duration sendTimeout,
        Duration retryBackoffMax,
        WhenUnpublished whenUnpublished,
        Duration waitTimeout) {

    public static final long DEFAULT_ID_FROM = 1;
    public static final long DEFAULT_ID_TO = Long.MAX_VALUE;
    /** 0: unlimited. */
    public static final double DEFAULT_MAX_RATE = 0;
    public static final int DEFAULT_BATCH_SIZE = 1_000;
    public static final int MAX_BATCH_SIZE = 100_000;
    public static final Duration DEFAULT_SEND_TIMEOUT = Duration.ofSeconds(30);
    public static final Duration DEFAULT_RETRY_BACKOFF_MAX = Duration.ofSeconds(5);
    /** A rebuilt read model must not miss events: by default a replay waits for the ones not published yet. */
    public static final WhenUnpublished DEFAULT_WHEN_UNPUBLISHED = WhenUnpublished.WAIT;
    /** The longest a run waits for one event (or for the range's writers to settle) before it returns. */
    public static final Duration DEFAULT_WAIT_TIMEOUT = Duration.ofMinutes(10);

    /** Every setting of a replay ({@code txoutbox.replay.*}). */
    public static final ConfigDescriptor<OutboxReplay.Builder, ReplayConfig> DESCRIPTOR =
            DescriptorBuilder.<OutboxReplay.Builder, ReplayConfig>define("replay")
                    .add("name", String.class, null, "", "The replay's name: its checkpoint, its transport lane and "
                            + "the replay header's value (required)", OutboxReplay.Builder::name, ReplayConfig::name)
                    .add("toTopic", String.class, null, "", "Send every record to this topic instead of its own",
                            OutboxReplay.Builder::toTopic, ReplayConfig::toTopic)
                    .add("topic", String.class, null, "", "Only events of this (original) topic",
                            OutboxReplay.Builder::topic, ReplayConfig::topic)
                    .add("aggregateType", String.class, null, "", "Only events of this aggregate type",
                            OutboxReplay.Builder::aggregateType, ReplayConfig::aggregateType)
                    .add("aggregateId", String.class, null, "", "Only events of this aggregate id",
                            OutboxReplay.Builder::aggregateId, ReplayConfig::aggregateId)
                    .add("eventType", String.class, null, "", "Only events of this event type",
                            OutboxReplay.Builder::eventType, ReplayConfig::eventType)
                    .add("createdFrom", Instant.class, null, "", "Only events written at or after this instant "
                            + "(ISO-8601; with created-to)", (b, v) -> b.createdFrom = v, ReplayConfig::createdFrom)
                    .add("createdTo", Instant.class, null, "", "Only events written before this instant (ISO-8601; "
                            + "with created-from)", (b, v) -> b.createdTo = v, ReplayConfig::createdTo)
                    .add("idFrom", Long.class, DEFAULT_ID_FROM, "", "Only events with outbox ids >= this",
                            (b, v) -> b.idFrom = v, ReplayConfig::idFrom)
                    .add("idTo", Long.class, DEFAULT_ID_TO, "", "Only events with outbox ids <= this",
                            (b, v) -> b.idTo = v, ReplayConfig::idTo)
                    .add("maxRate", Double.class, DEFAULT_MAX_RATE, "events/s", "Events per second at most (0: "
                            + "unlimited)", OutboxReplay.Builder::maxRate, ReplayConfig::maxRate)
                    .add("batchSize", Integer.class, DEFAULT_BATCH_SIZE, "events", "Events per page: read, sent as "
                            + "one batch, checkpointed (1 to " + MAX_BATCH_SIZE + ")", OutboxReplay.Builder::batchSize,
                            ReplayConfig::batchSize)
                    .add("sendTimeout", Duration.class, DEFAULT_SEND_TIMEOUT, "", "Longest wait for one page's "
                            + "acknowledgements before it is sent again", OutboxReplay.Builder::sendTimeout,
                            ReplayConfig::sendTimeout)
                    .add("retryBackoffMax", Duration.class, DEFAULT_RETRY_BACKOFF_MAX, "", "Cap of the pause "
                            + "before a page is sent again", (b, v) -> b.retryBackoffMax = v,
                            ReplayConfig::retryBackoffMax)
                    .add("whenUnpublished", WhenUnpublished.class, DEFAULT_WHEN_UNPUBLISHED, "", "At an event not "
                            + "published yet: WAIT for it or REPORT it and go on", OutboxReplay.Builder::whenUnpublished,
                            ReplayConfig::whenUnpublished)
                    .add("waitTimeout", Duration.class, DEFAULT_WAIT_TIMEOUT, "", "The longest one wait lasts; "
                            + "then the run returns WAIT_TIMED_OUT, resumable", OutboxReplay.Builder::waitTimeout,
                            ReplayConfig::waitTimeout)
                    .build();

    public ReplayConfig {
        Checks.schema("replay", schema);
        Checks.name("replay.name", name);
        if (toTopic != null) {
            Checks.topic("replay.toTopic", toTopic);
        }
        Checks.between("replay.batchSize", batchSize, 1, MAX_BATCH_SIZE);
        if (maxRate < 0 || Double.isNaN(maxRate)) {
            throw Checks.invalid("replay.maxRate", "must be >= 0 (0 = unlimited), was " + maxRate);
        }
        if (idFrom > idTo) {
            throw Checks.invalid("replay.idFrom", "(" + idFrom + ") is after replay.idTo (" + idTo + ")");
        }
        if ((createdFrom == null) != (createdTo == null)
                || (createdFrom != null && !createdFrom.isBefore(createdTo))) {
            throw Checks.invalid("replay.createdFrom", "must be before replay.createdTo (both set or neither), was "
                    + createdFrom + " .. " + createdTo);
        }
        Checks.positive("replay.sendTimeout", sendTimeout);
        Checks.positive("replay.retryBackoffMax", retryBackoffMax);
        if (whenUnpublished == null) {
            throw Checks.invalid("replay.whenUnpublished", "must not be null: WAIT or REPORT");
        }
        Checks.positive("replay.waitTimeout", waitTimeout);
    }
}
