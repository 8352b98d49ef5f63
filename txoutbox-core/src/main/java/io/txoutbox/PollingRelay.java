package io.txoutbox;

import io.txoutbox.internal.config.Checks;
import io.txoutbox.internal.config.RetryDraft;
import io.txoutbox.internal.relay.DefaultPollingRelay;
import io.txoutbox.spi.RelayListener;
import io.txoutbox.spi.Transport;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import javax.sql.DataSource;

/**
 * Publishes pending outbox rows through a {@link Transport} (Kafka) and marks them published.
 *
 * <pre>{@code
 * PollingRelay relay = PollingRelay.builder()
 *         .dataSource(relayDataSource)          // a few connections of its own
 *         .transport(KafkaTransport.builder().bootstrapServers("kafka:9092").build())
 *         .build();
 * relay.start();
 * Outbox outbox = Outbox.builder().nudge(relay).build();   // wake its lanes of the written shards right after writes
 * ...
 * relay.close();
 * }</pre>
 *
 * <p>The shards of the outbox are split into {@code lanes}; each lane sends one batch at a time: read the oldest due
 * pending rows of its shards (skipping keys that wait), hand them all to the transport, wait for every
 * acknowledgement, mark the delivered ones published in one statement. A lane works only while it holds its
 * PostgreSQL advisory lock on its own connection — so of several relay instances exactly one works each lane and the
 * others wait as hot standbys — and it marks rows through that same session, so a relay that lost its lock cannot
 * mark anything. No database transaction is open while the broker is waited for.
 *
 * <p>Operations: {@link Builder#listener} receives metrics ({@code io.txoutbox.micrometer.MicrometerRelayListener}
 * for Micrometer), {@link OutboxHealth} says UP or DOWN (event age, stalled lanes, parked or dead events growing),
 * {@link OutboxStatus#snapshot} shows the backlog and which instance owns which lane, {@link OutboxAdmin} releases
 * parked keys.
 */
public interface PollingRelay extends AutoCloseable {

    /**
     * Starts the lanes; returns at once. First checks that the database role holds every privilege the relay needs
     * ({@link OutboxGrants.Component#RELAY}) and throws an {@link OutboxException} naming the GRANT statements it
     * lacks; when the database cannot be reached yet, the lanes start and a missing privilege stops them later (see
     * {@link #failure()}).
     */
    PollingRelay start();

    /**
     * Why the relay stopped on its own — its role lost a privilege it needs (SQLState 42501), which retrying would not
     * change — with the GRANT statements to run; or its settings contradict the table (a {@code ROW_STATE} relay on a
     * table whose relays record their progress in cursors), with the fix; or why one of its lanes stopped: another
     * outbox uses the lane's fencing id (Kafka's {@code transactional.id}), with both sides and the fix. Empty while it
     * runs.
     */
    default java.util.Optional<OutboxException> failure() {
        return java.util.Optional.empty();
    }

    /** Wakes the lanes now (call after a commit that wrote events); cheap, never blocks. */
    void nudge();

    /**
     * Wakes only the lane that works {@code shard} (an outbox row's {@code shard} column), letting the others sleep
     * on: what {@link Outbox.Builder#nudge(PollingRelay)} calls for the shards a publish wrote. Cheap, never blocks;
     * a shard outside the schema's wakes every lane.
     */
    default void nudge(int shard) {
        nudge();
    }

    /** Counters since start. */
    RelayStats stats();

    /** The lanes this instance owns now: since when, and its last batch. */
    List<LaneStatus> lanes();

    /**
     * One lane owned by this instance: since when, its last batch (null: none yet), and when it last went once round
     * its loop — a batch, an empty claim or an outage pause; a lane whose {@code lastLoopAt} lags far behind is stuck
     * ({@link OutboxHealth} reports it).
     */
    record LaneStatus(int lane, java.time.Instant ownedSince, java.time.Instant lastBatchAt, int lastBatchSize,
            java.time.Instant lastLoopAt) {
    }

    RelayConfig config();

    /** Stops the lanes: waits for the batches in flight (bounded), releases locks and connections. Idempotent. */
    @Override
    void close();

    static Builder builder() {
        return new Builder();
    }

    /** This instance's id in status views and logs: {@code <name>@<host>:<pid>#<n>}. */
    String instanceId();

    /**
     * Counters of one relay since it started; {@code fencedMarks} counts marks refused or given up after a lost lease,
     * {@code markRetries} marks tried again after a failure other than a lost session (the lane keeps its lease and
     * does not send the batch again).
     */
    record RelayStats(long published, long failedAttempts, long parked, long deadLettered, long batches,
            long loopErrors, int lanesOwned, long fencedMarks, long markRetries) {

        public RelayStats(long published, long failedAttempts, long parked, long deadLettered, long batches,
                long loopErrors, int lanesOwned, long fencedMarks) {
            this(published, failedAttempts, parked, deadLettered, batches, loopErrors, lanesOwned, fencedMarks, 0);
        }
    }

    /** Validating builder; {@link #build()} fails fast and names the property at fault. */
    final class Builder {
        private DataSource dataSource;
        private Transport transport;
        private OutboxSchema schema = OutboxSchema.defaults();
        private String name = RelayConfig.DEFAULT_NAME;
        private int lanes = RelayConfig.DEFAULT_LANES;
        private int batchSize = RelayConfig.DEFAULT_BATCH_SIZE;
        private long maxBatchBytes = RelayConfig.DEFAULT_MAX_BATCH_BYTES;
        private Duration pollInterval = RelayConfig.DEFAULT_POLL_INTERVAL;
        private Duration linger = RelayConfig.DEFAULT_LINGER;
        private Duration sendTimeout = RelayConfig.DEFAULT_SEND_TIMEOUT;
        private Duration statementTimeout = RelayConfig.DEFAULT_STATEMENT_TIMEOUT;
        private Duration lockTimeout = RelayConfig.DEFAULT_LOCK_TIMEOUT;
        private Duration transactionTimeout = RelayConfig.DEFAULT_TRANSACTION_TIMEOUT;
        private Duration outageBackoffMax = RelayConfig.DEFAULT_OUTAGE_BACKOFF_MAX;
        private Duration leaseTimeout = RelayConfig.DEFAULT_LEASE_TIMEOUT;
        private int maxLanesPerInstance = RelayConfig.DEFAULT_MAX_LANES_PER_INSTANCE;
        private final RetryDraft retry = new RetryDraft("relay", RetryPolicy.defaults());
        private FailurePolicy failurePolicy = RelayConfig.DEFAULT_FAILURE_POLICY;
        private String deadLetterTopic;
        private boolean listenNotify;
        private boolean logPartitionKeys = RelayConfig.DEFAULT_LOG_PARTITION_KEYS;
        private RelayListener listener = RelayListener.none();

        private Builder() {
        }

        /** Where the relay gets its connections: one per lane, held while it works (plus one for LISTEN). */
        public Builder dataSource(DataSource dataSource) {
            this.dataSource = dataSource;
            return this;
        }

        /** Where events go; the relay owns it from now on and closes it when the relay closes. */
        public Builder transport(Transport transport) {
            this.transport = transport;
            return this;
        }

        /** Where the outbox is, default {@link OutboxSchema#defaults()}; {@code null} is refused here. */
        public Builder schema(OutboxSchema schema) {
            this.schema = Checks.schema("relay", schema);
            return this;
        }

        /**
         * Names the relay group in logs, thread names and the transport's lane ids ({@code <name>-<lane>}): give
         * every instance of one relay the same name, so that a lane has the same Kafka {@code transactional.id}
         * wherever it runs and a new owner fences the old one.
         */
        public Builder name(String name) {
            this.name = name;
            return this;
        }

        /** Lanes, each sending one batch at a time, default {@value RelayConfig#DEFAULT_LANES}; same in all instances. */
        public Builder lanes(int lanes) {
            this.lanes = lanes;
            return this;
        }

        /** Rows per batch, default {@value RelayConfig#DEFAULT_BATCH_SIZE}. */
        public Builder batchSize(int batchSize) {
            this.batchSize = batchSize;
            return this;
        }

        /**
         * A batch stops growing once its payloads reach this many bytes (it always takes at least one event),
         * default 16 MiB.
         */
        public Builder maxBatchBytes(long maxBatchBytes) {
            this.maxBatchBytes = maxBatchBytes;
            return this;
        }

        /** How often an idle lane looks for work without a nudge, default 500 ms. */
        public Builder pollInterval(Duration pollInterval) {
            this.pollInterval = pollInterval;
            return this;
        }

        /**
         * How long a lane that has caught up waits before its next claim, default 0 (at once): after a nudge wakes
         * it, and after a batch that was not full, it claims once this much time has passed since its previous claim
         * began, so events that commit within it go out in one batch — fewer round trips and less CPU per event at
         * moderate rates, for up to this much latency (like Kafka's {@code linger.ms}). A full batch is followed by
         * the next claim at once, so a backlog drains at full speed. At most {@link RelayConfig#MAX_LINGER}.
         */
        public Builder linger(Duration linger) {
            this.linger = linger;
            return this;
        }

        /** How long a lane waits for a batch's acknowledgements before it counts the batch as failed. */
        public Builder sendTimeout(Duration sendTimeout) {
            this.sendTimeout = sendTimeout;
            return this;
        }

        public Builder statementTimeout(Duration statementTimeout) {
            this.statementTimeout = statementTimeout;
            return this;
        }

        public Builder lockTimeout(Duration lockTimeout) {
            this.lockTimeout = lockTimeout;
            return this;
        }

        /** The longest any relay transaction may stay open (PostgreSQL ends it beyond), default 10 s. */
        public Builder transactionTimeout(Duration transactionTimeout) {
            this.transactionTimeout = transactionTimeout;
            return this;
        }

        /** Cap of a lane's pause while the transport is down, default 5 s. */
        public Builder outageBackoffMax(Duration outageBackoffMax) {
            this.outageBackoffMax = outageBackoffMax;
            return this;
        }

        /**
         * How long a lane stays owned by an instance that stopped answering (paused, cut off, frozen) before
         * PostgreSQL ends its session and another instance takes the lane over; default 10 s. A crashed process is
         * noticed at once.
         */
        public Builder leaseTimeout(Duration leaseTimeout) {
            this.leaseTimeout = leaseTimeout;
            return this;
        }

        /** The most lanes this instance works at once (default: its fair share, all when alone). */
        public Builder maxLanesPerInstance(int maxLanesPerInstance) {
            this.maxLanesPerInstance = maxLanesPerInstance;
            return this;
        }

        /** Per-key retries, default {@link RetryPolicy#defaults()}. */
        public Builder retry(RetryPolicy retry) {
            this.retry.set(retry);
            return this;
        }

        /**
         * Applies settings by their names in {@link RelayConfig#DESCRIPTOR} ({@code "batch-size"} or
         * {@code "txoutbox.relay.batch-size"}), each value its text form ({@code "500"}, {@code "250ms"}) or typed;
         * an unknown name or an unreadable value fails and changes nothing.
         */
        public Builder settings(java.util.Map<String, ?> settings) {
            return RelayConfig.DESCRIPTOR.apply(this, settings);
        }

        RetryDraft retryDraft() {
            return retry;
        }

        public Builder failurePolicy(FailurePolicy failurePolicy) {
            this.failurePolicy = failurePolicy;
            return this;
        }

        /** With {@link FailurePolicy#DEAD_LETTER_AND_CONTINUE}: also send dead events to this topic. */
        public Builder deadLetterTopic(String deadLetterTopic) {
            this.deadLetterTopic = deadLetterTopic;
            return this;
        }

        /**
         * Also wake on PostgreSQL {@code NOTIFY} (off by default): pair it with
         * {@link Outbox.Builder#notifyOnPublish(boolean)}. NOTIFY serialises committing writers on a global lock.
         */
        public Builder listenNotify(boolean listenNotify) {
            this.listenNotify = listenNotify;
            return this;
        }

        /**
         * Write partition keys into log lines (default off: keys are often personal data, such as a customer id or an
         * e-mail address). Off, a line shows the key's tag instead ({@code #} and 8 hex digits, the same for a key
         * throughout one process, not reversible); the event id in the line leads to the key through
         * {@link OutboxAdmin#show}.
         */
        public Builder logPartitionKeys(boolean logPartitionKeys) {
            this.logPartitionKeys = logPartitionKeys;
            return this;
        }

        /**
         * Receives the relay's events for metrics (batches and their timings, published events with their
         * commit→ack latency, failures by kind, parked keys, dead events, loop errors); default none. For Micrometer:
         * {@code new io.txoutbox.micrometer.MicrometerRelayListener(registry)}. Its callbacks run on the lanes'
         * threads and must not block; whatever they throw is caught and logged once.
         */
        public Builder listener(RelayListener listener) {
            this.listener = listener;
            return this;
        }

        /**
         * The configuration {@link #build()} would use, validated (the data source, transport and listener are not
         * part of it), e.g. to size the relay's pool by its lanes before building it.
         */
        public RelayConfig config() {
            return new RelayConfig(schema, name, lanes, batchSize, maxBatchBytes, pollInterval, linger, sendTimeout,
                    statementTimeout, lockTimeout, transactionTimeout, outageBackoffMax, leaseTimeout,
                    maxLanesPerInstance, retry.toPolicy(), failurePolicy, deadLetterTopic, listenNotify, logPartitionKeys);
        }

        public PollingRelay build() {
            if (dataSource == null) {
                throw new InvalidConfigurationException("relay.dataSource is required: the relay reads and marks "
                        + "the outbox through connections of its own");
            }
            if (transport == null) {
                throw new InvalidConfigurationException("relay.transport is required, e.g. "
                        + "KafkaTransport.builder().bootstrapServers(...).build()");
            }
            RelayConfig config = config();
            if (listener == null) {
                throw new InvalidConfigurationException("relay.listener must not be null; leave it unset for none");
            }
            return new DefaultPollingRelay(config, Objects.requireNonNull(dataSource), transport, listener);
        }
    }
}
