package io.txoutbox;

import io.txoutbox.internal.config.Checks;
import io.txoutbox.internal.config.DescriptorBuilder;
import io.txoutbox.internal.config.RetryDraft;
import io.txoutbox.internal.config.Values;
import java.time.Duration;
import java.util.Map;
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

    /**
     * Every setting of the inbox worker, as the starter, the CLI and the docs name them
     * ({@code txoutbox.inbox-worker.*}). Handlers, the default handler, the permanent-failure predicate, the schema
     * and the listener are builder calls only.
     */
    public static final ConfigDescriptor<InboxWorker.Builder, InboxWorkerConfig> DESCRIPTOR =
            RetryDraft.addSettings(DescriptorBuilder.<InboxWorker.Builder, InboxWorkerConfig>define("inboxWorker")
                    .add("consumer", String.class, null, "", "The consumer whose inbox rows this worker processes "
                            + "(required)", InboxWorker.Builder::consumer, InboxWorkerConfig::consumer)
                    .add("name", String.class, DEFAULT_NAME, "", "Names the worker in logs and thread names",
                            InboxWorker.Builder::name, InboxWorkerConfig::name)
                    .add("lanes", Integer.class, DEFAULT_LANES, "", "Lanes (threads), 1 to " + INBOX_SHARDS
                            + "; the same in all workers of a consumer", InboxWorker.Builder::lanes,
                            InboxWorkerConfig::lanes)
                    .add("batchSize", Integer.class, DEFAULT_BATCH_SIZE, "events", "Events per transaction (1 to "
                            + MAX_BATCH_SIZE + ")", InboxWorker.Builder::batchSize, InboxWorkerConfig::batchSize)
                    .add("pollInterval", Duration.class, DEFAULT_POLL_INTERVAL, "", "How often an idle lane looks "
                            + "for work without a nudge", InboxWorker.Builder::pollInterval,
                            InboxWorkerConfig::pollInterval),
                    InboxWorker.Builder::retryDraft, InboxWorkerConfig::retry)
                    .add("failurePolicy", FailurePolicy.class, DEFAULT_FAILURE_POLICY, "", "What happens to an event"
                            + " that used up its attempts: PARK_KEY, DEAD_LETTER_AND_CONTINUE, ...",
                            InboxWorker.Builder::failurePolicy, InboxWorkerConfig::failurePolicy)
                    .add("logPartitionKeys", Boolean.class, DEFAULT_LOG_PARTITION_KEYS, "", "Write partition keys "
                            + "into log lines instead of their tags", InboxWorker.Builder::logPartitionKeys,
                            InboxWorkerConfig::logPartitionKeys)
                    .add("leaseTimeout", Duration.class, DEFAULT_LEASE_TIMEOUT, "", "How long a lane stays owned "
                            + "by a worker that stopped answering (>= 1s)", InboxWorker.Builder::leaseTimeout,
                            InboxWorkerConfig::leaseTimeout)
                    .add("handlerTimeout", Duration.class, DEFAULT_HANDLER_TIMEOUT, "", "A handler's time budget; "
                            + "at most half of lease-timeout", InboxWorker.Builder::handlerTimeout,
                            InboxWorkerConfig::handlerTimeout)
                    .build();

    public InboxWorkerConfig {
        Checks.schema("inboxWorker", schema);
        Checks.notNull("inboxWorker.retry", retry);
        Checks.notNull("inboxWorker.failurePolicy", failurePolicy);
        Checks.notNull("inboxWorker.permanentFailure", permanentFailure);
        Checks.consumer("inboxWorker.consumer", consumer);
        handlers = Map.copyOf(Checks.notNull("inboxWorker.handlers", handlers));
        if (handlers.isEmpty() && defaultHandler == null) {
            throw new InvalidConfigurationException("inboxWorker needs at least one handler: "
                    + "handler(eventType, handler) or defaultHandler(handler)");
        }
        Checks.name("inboxWorker.name", name);
        Checks.between("inboxWorker.lanes", lanes, 1, INBOX_SHARDS);
        Checks.between("inboxWorker.batchSize", batchSize, 1, MAX_BATCH_SIZE);
        Checks.positive("inboxWorker.pollInterval", pollInterval);
        if (leaseTimeout == null || leaseTimeout.compareTo(Duration.ofSeconds(1)) < 0) {
            throw Checks.invalid("inboxWorker.leaseTimeout", "must be >= 1 s, was " + Values.format(leaseTimeout));
        }
        Checks.positive("inboxWorker.handlerTimeout", handlerTimeout);
        if (handlerTimeout.multipliedBy(2).compareTo(leaseTimeout) > 0) {
            throw Checks.invalid("inboxWorker.handlerTimeout", "(" + handlerTimeout + ") must be at"
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

    /**
     * Consumer names: 1 to 200 characters, no control characters ({@code Checks.consumer}'s rule). For a consumer
     * passed as an argument: the message names the argument and no setting.
     */
    public static String requireConsumer(String property, String consumer) {
        return Checks.consumerArgument(property, consumer);
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
