package io.txoutbox;

import java.time.Duration;
import java.util.Map;
import java.util.Objects;
import java.util.function.Predicate;

/** The inbox worker's validated, immutable configuration; see {@link InboxWorker.Builder} for each value. */
public record InboxWorkerConfig(
        OutboxSchema schema,
        String consumer,
        String name,
        Map<String, InboxHandler> handlers,
        InboxHandler defaultHandler,
        int lanes,
        int batchSize,
        Duration pollInterval,
        RetryPolicy retry,
        FailurePolicy failurePolicy,
        Predicate<Throwable> permanentFailure,
        boolean logPartitionKeys,
        Duration leaseTimeout,
        Duration handlerTimeout) {

    /** The inbox table's fixed shard count (V2__inbox.sql); lanes split these. */
    public static final int INBOX_SHARDS = 64;
    public static final String DEFAULT_NAME = "inbox";
    public static final int DEFAULT_LANES = 2;
    public static final int DEFAULT_BATCH_SIZE = 100;
    public static final int MAX_BATCH_SIZE = 5_000;
    public static final Duration DEFAULT_POLL_INTERVAL = Duration.ofMillis(500);
    public static final FailurePolicy DEFAULT_FAILURE_POLICY = FailurePolicy.PARK_KEY;
    /** Keys can be personal data: log lines show a per-process tag of the key unless this is turned on. */
    public static final boolean DEFAULT_LOG_PARTITION_KEYS = false;
    /** The relay's: a stopped worker's lanes (and its open batch) are given up this long after it stopped talking. */
    public static final Duration DEFAULT_LEASE_TIMEOUT = RelayConfig.DEFAULT_LEASE_TIMEOUT;
    /** A handler's time budget; at most half the lease (see {@link InboxWorker.Builder#handlerTimeout}). */
    public static final Duration DEFAULT_HANDLER_TIMEOUT = Duration.ofSeconds(5);

    public InboxWorkerConfig {
        Objects.requireNonNull(schema, "inboxWorker.schema must not be null");
        Objects.requireNonNull(retry, "inboxWorker.retry must not be null");
        Objects.requireNonNull(failurePolicy, "inboxWorker.failurePolicy must not be null");
        Objects.requireNonNull(permanentFailure, "inboxWorker.permanentFailure must not be null");
        requireConsumer("inboxWorker.consumer", consumer);
        handlers = Map.copyOf(Objects.requireNonNull(handlers, "inboxWorker.handlers"));
        if (handlers.isEmpty() && defaultHandler == null) {
            throw new InvalidConfigurationException("inboxWorker needs at least one handler: "
                    + "handler(eventType, handler) or defaultHandler(handler)");
        }
        if (name == null || !name.matches("[A-Za-z0-9._-]{1,100}")) {
            throw new InvalidConfigurationException(
                    "inboxWorker.name must be 1 to 100 characters from [A-Za-z0-9._-], was " + name);
        }
        if (lanes < 1 || lanes > INBOX_SHARDS) {
            throw new InvalidConfigurationException("inboxWorker.lanes must be between 1 and " + INBOX_SHARDS
                    + ", was " + lanes);
        }
        if (batchSize < 1 || batchSize > MAX_BATCH_SIZE) {
            throw new InvalidConfigurationException(
                    "inboxWorker.batchSize must be between 1 and " + MAX_BATCH_SIZE + ", was " + batchSize);
        }
        if (pollInterval == null || pollInterval.isNegative() || pollInterval.isZero()) {
            throw new InvalidConfigurationException("inboxWorker.pollInterval must be > 0, was " + pollInterval);
        }
        if (leaseTimeout == null || leaseTimeout.compareTo(Duration.ofSeconds(1)) < 0) {
            throw new InvalidConfigurationException("inboxWorker.leaseTimeout must be >= 1 s, was " + leaseTimeout);
        }
        if (handlerTimeout == null || handlerTimeout.isNegative() || handlerTimeout.isZero()) {
            throw new InvalidConfigurationException("inboxWorker.handlerTimeout must be > 0, was " + handlerTimeout);
        }
        if (handlerTimeout.multipliedBy(2).compareTo(leaseTimeout) > 0) {
            throw new InvalidConfigurationException("inboxWorker.handlerTimeout (" + handlerTimeout + ") must be at"
                    + " most half of inboxWorker.leaseTimeout (" + leaseTimeout + "): a handler runs inside its"
                    + " batch's transaction, and a session that waits in it for the lease is ended with the batch;"
                    + " raise leaseTimeout to at least twice the handler's budget, or lower handlerTimeout");
        }
    }

    /** The configuration without a lease or handler budget of its own: the defaults. */
    public InboxWorkerConfig(OutboxSchema schema, String consumer, String name, Map<String, InboxHandler> handlers,
            InboxHandler defaultHandler, int lanes, int batchSize, Duration pollInterval, RetryPolicy retry,
            FailurePolicy failurePolicy, Predicate<Throwable> permanentFailure, boolean logPartitionKeys) {
        this(schema, consumer, name, handlers, defaultHandler, lanes, batchSize, pollInterval, retry, failurePolicy,
                permanentFailure, logPartitionKeys, DEFAULT_LEASE_TIMEOUT, DEFAULT_HANDLER_TIMEOUT);
    }

    /** Consumer names: 1 to 200 characters, no control characters. */
    public static String requireConsumer(String property, String consumer) {
        if (consumer == null || consumer.isEmpty() || consumer.length() > 200
                || consumer.chars().anyMatch(Character::isISOControl)) {
            throw new InvalidConfigurationException(property + " must be 1 to 200 characters without control "
                    + "characters, was " + (consumer == null ? "null" : "'" + consumer + "'"));
        }
        return consumer;
    }

    @Override
    public String toString() {
        return "InboxWorkerConfig[schema=" + schema.schema() + ", consumer=" + consumer + ", name=" + name
                + ", handlers=" + handlers.keySet() + (defaultHandler != null ? "+default" : "") + ", lanes=" + lanes
                + ", batchSize=" + batchSize + ", pollInterval=" + pollInterval + ", retry=" + retry
                + ", failurePolicy=" + failurePolicy + ", logPartitionKeys=" + logPartitionKeys + ", leaseTimeout="
                + leaseTimeout + ", handlerTimeout=" + handlerTimeout + "]";
    }
}
