package io.txoutbox;

import io.txoutbox.internal.config.Checks;
import io.txoutbox.internal.config.DescriptorBuilder;
import io.txoutbox.internal.config.RetryDraft;
import io.txoutbox.internal.config.Values;
import java.time.Duration;

/**
 * The polling relay's validated, immutable configuration; see {@link PollingRelay.Builder} for what each value does.
 */
public record RelayConfig(
        OutboxSchema schema,
        String name,
        int lanes,
        int batchSize,
        long maxBatchBytes,
        Duration pollInterval,
        Duration linger,
        Duration sendTimeout,
        Duration statementTimeout,
        Duration lockTimeout,
        Duration transactionTimeout,
        Duration outageBackoffMax,
        Duration leaseTimeout,
        int maxLanesPerInstance,
        RetryPolicy retry,
        FailurePolicy failurePolicy,
        String deadLetterTopic,
        boolean listenNotify,
        boolean logPartitionKeys) {

    public static final String DEFAULT_NAME = "relay";
    /** Four lanes keep both the database and the broker busy (drain by lanes: BENCHMARKS.md, section 00). */
    public static final int DEFAULT_LANES = 4;
    /** Large batches amortise the Kafka transaction per batch (drain by batch size: BENCHMARKS.md, section 1). */
    public static final int DEFAULT_BATCH_SIZE = 2_000;
    /** A batch stops growing at this many payload bytes, so large events cannot exhaust memory. */
    public static final long DEFAULT_MAX_BATCH_BYTES = 16L * 1024 * 1024;
    public static final int MAX_BATCH_SIZE = 10_000;
    public static final Duration DEFAULT_POLL_INTERVAL = Duration.ofMillis(500);
    /** A lane claims again at once (what lingering costs and saves: BENCHMARKS.md, "linger"). */
    public static final Duration DEFAULT_LINGER = Duration.ZERO;
    /** The longest linger: a lane that waits longer only adds latency (a batch gathers what one claim can send). */
    public static final Duration MAX_LINGER = Duration.ofSeconds(1);
    public static final Duration DEFAULT_SEND_TIMEOUT = Duration.ofSeconds(30);
    public static final Duration DEFAULT_STATEMENT_TIMEOUT = Duration.ofSeconds(5);
    public static final Duration DEFAULT_LOCK_TIMEOUT = Duration.ofSeconds(2);
    public static final Duration DEFAULT_TRANSACTION_TIMEOUT = Duration.ofSeconds(10);
    public static final Duration DEFAULT_OUTAGE_BACKOFF_MAX = Duration.ofSeconds(5);
    public static final Duration DEFAULT_LEASE_TIMEOUT = Duration.ofSeconds(10);
    public static final FailurePolicy DEFAULT_FAILURE_POLICY = FailurePolicy.PARK_KEY;
    /** Keys can be personal data: log lines show a per-process tag of the key unless this is turned on. */
    public static final boolean DEFAULT_LOG_PARTITION_KEYS = false;
    /** No cap of its own: an instance works its fair share of the lanes, all of them when alone. */
    public static final int DEFAULT_MAX_LANES_PER_INSTANCE = Integer.MAX_VALUE;

    /** Every setting of the relay, as the starter, the CLI and the docs name them ({@code txoutbox.relay.*}). */
    public static final ConfigDescriptor<PollingRelay.Builder, RelayConfig> DESCRIPTOR =
            RetryDraft.addSettings(DescriptorBuilder.<PollingRelay.Builder, RelayConfig>define("relay")
                    .add("name", String.class, DEFAULT_NAME, "", "Names the relay group in logs, threads and the "
                            + "transport's lane ids; the same in every instance", PollingRelay.Builder::name,
                            RelayConfig::name)
                    .add("lanes", Integer.class, DEFAULT_LANES, "", "Lanes, each sending one batch at a time; the "
                            + "same in every instance", PollingRelay.Builder::lanes, RelayConfig::lanes)
                    .add("batchSize", Integer.class, DEFAULT_BATCH_SIZE, "events", "Most events per batch (1 to "
                            + MAX_BATCH_SIZE + ")", PollingRelay.Builder::batchSize, RelayConfig::batchSize)
                    .add("maxBatchBytes", Long.class, DEFAULT_MAX_BATCH_BYTES, "bytes", "A batch stops growing at "
                            + "this many payload bytes (it always takes one event)", PollingRelay.Builder::maxBatchBytes,
                            RelayConfig::maxBatchBytes)
                    .add("pollInterval", Duration.class, DEFAULT_POLL_INTERVAL, "", "How often an idle lane looks "
                            + "for work without a nudge", PollingRelay.Builder::pollInterval, RelayConfig::pollInterval)
                    .add("linger", Duration.class, DEFAULT_LINGER, "", "How long a lane that has caught up waits "
                            + "before its next claim, to send what commits meanwhile in the same batch (as Kafka's "
                            + "linger.ms); 0: at once", PollingRelay.Builder::linger, RelayConfig::linger)
                    .add("sendTimeout", Duration.class, DEFAULT_SEND_TIMEOUT, "", "How long a lane waits for a "
                            + "batch's acknowledgements", PollingRelay.Builder::sendTimeout, RelayConfig::sendTimeout)
                    .add("statementTimeout", Duration.class, DEFAULT_STATEMENT_TIMEOUT, "", "statement_timeout of "
                            + "the lanes' sessions", PollingRelay.Builder::statementTimeout,
                            RelayConfig::statementTimeout)
                    .add("lockTimeout", Duration.class, DEFAULT_LOCK_TIMEOUT, "", "lock_timeout of the lanes' "
                            + "sessions", PollingRelay.Builder::lockTimeout, RelayConfig::lockTimeout)
                    .add("transactionTimeout", Duration.class, DEFAULT_TRANSACTION_TIMEOUT, "", "The longest a "
                            + "relay transaction may stay open (PostgreSQL ends it beyond); >= statement-timeout",
                            PollingRelay.Builder::transactionTimeout, RelayConfig::transactionTimeout)
                    .add("outageBackoffMax", Duration.class, DEFAULT_OUTAGE_BACKOFF_MAX, "", "Cap of a lane's pause "
                            + "while the transport is down", PollingRelay.Builder::outageBackoffMax,
                            RelayConfig::outageBackoffMax)
                    .add("leaseTimeout", Duration.class, DEFAULT_LEASE_TIMEOUT, "", "How long a lane stays owned "
                            + "by an instance that stopped answering (>= 1s)", PollingRelay.Builder::leaseTimeout,
                            RelayConfig::leaseTimeout)
                    .add("maxLanesPerInstance", Integer.class, DEFAULT_MAX_LANES_PER_INSTANCE, "", "The most lanes "
                            + "this instance works at once (default: its fair share)",
                            PollingRelay.Builder::maxLanesPerInstance, RelayConfig::maxLanesPerInstance),
                    PollingRelay.Builder::retryDraft, RelayConfig::retry)
                    .add("failurePolicy", FailurePolicy.class, DEFAULT_FAILURE_POLICY, "", "What happens to an event"
                            + " that used up its attempts: PARK_KEY, DEAD_LETTER_AND_CONTINUE, ...",
                            PollingRelay.Builder::failurePolicy, RelayConfig::failurePolicy)
                    .add("deadLetterTopic", String.class, null, "", "With DEAD_LETTER_AND_CONTINUE: also send dead "
                            + "events to this topic", PollingRelay.Builder::deadLetterTopic,
                            RelayConfig::deadLetterTopic)
                    .add("listenNotify", Boolean.class, false, "", "Also wake on PostgreSQL NOTIFY (pair with the "
                            + "outbox's notify-on-publish)", PollingRelay.Builder::listenNotify,
                            RelayConfig::listenNotify)
                    .add("logPartitionKeys", Boolean.class, DEFAULT_LOG_PARTITION_KEYS, "", "Write partition keys "
                            + "into log lines instead of their tags", PollingRelay.Builder::logPartitionKeys,
                            RelayConfig::logPartitionKeys)
                    .build();

    public RelayConfig {
        Checks.schema("relay", schema);
        Checks.notNull("relay.retry", retry);
        Checks.notNull("relay.failurePolicy", failurePolicy);
        Checks.name("relay.name", name);
        Checks.between("relay.lanes", lanes, 1, schema.shards());
        Checks.between("relay.batchSize", batchSize, 1, MAX_BATCH_SIZE);
        Checks.atLeast("relay.maxBatchBytes", maxBatchBytes, 1);
        Checks.positive("relay.pollInterval", pollInterval);
        Checks.notNegative("relay.linger", linger);
        if (linger.compareTo(MAX_LINGER) > 0) {
            throw Checks.invalid("relay.linger", "(" + Values.format(linger) + ") must be at most "
                    + Values.format(MAX_LINGER) + ": a lane that waits longer only adds latency");
        }
        Checks.positive("relay.sendTimeout", sendTimeout);
        Checks.positive("relay.statementTimeout", statementTimeout);
        Checks.positive("relay.lockTimeout", lockTimeout);
        Checks.positive("relay.transactionTimeout", transactionTimeout);
        Checks.positive("relay.outageBackoffMax", outageBackoffMax);
        Checks.atLeast("relay.leaseTimeout", leaseTimeout, Duration.ofSeconds(1));
        Checks.atLeast("relay.maxLanesPerInstance", maxLanesPerInstance, 1);
        if (transactionTimeout.compareTo(statementTimeout) < 0) {
            throw Checks.invalid("relay.transactionTimeout", "(" + Values.format(transactionTimeout)
                    + ") must be >= relay.statementTimeout (" + Values.format(statementTimeout) + ")");
        }
        if (deadLetterTopic != null) {
            Checks.topic("relay.deadLetterTopic", deadLetterTopic);
            if (failurePolicy != FailurePolicy.DEAD_LETTER_AND_CONTINUE) {
                throw Checks.invalid("relay.deadLetterTopic", "is set but relay.failurePolicy is " + failurePolicy
                        + ": dead-letter topics are used with DEAD_LETTER_AND_CONTINUE only");
            }
        }
    }
}
