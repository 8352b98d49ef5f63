package io.txoutbox;

import io.txoutbox.internal.config.Checks;
import io.txoutbox.internal.config.RetryDraft;
import io.txoutbox.internal.inbox.DefaultInboxWorker;
import io.txoutbox.internal.inbox.HandlerFailures;
import io.txoutbox.spi.InboxListener;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.function.Predicate;
import javax.sql.DataSource;

/**
 * Processes one consumer's rows of the durable inbox ({@code inbox_event}, filled by {@link Inbox#receive} or
 * {@code KafkaInboxConsumer}): runs the handler registered for each event's type and marks the row processed in the
 * same local transaction.
 *
 * <pre>{@code
 * InboxWorker worker = InboxWorker.builder()
 *         .dataSource(dataSource).consumer("billing")
 *         .handler("OrderCreated", (connection, event) -> createInvoice(connection, event))
 *         .build().start();
 * ...
 * worker.close();
 * }</pre>
 *
 * <p><b>Order.</b> The inbox is split into 64 shards by key hash and the shards into {@code lanes}. Each lane is one
 * thread with one connection that holds the lane's advisory lock (per consumer), so of several workers of one
 * consumer exactly one works each lane at a time, and a key's events are processed one at a time in the order they
 * were received. A lane claims a batch of due pending rows in id order, skipping keys that wait, and handles them in
 * one transaction with a savepoint per event: a failing event's effects are undone, its key waits (per-key backoff,
 * then {@link FailurePolicy}), and later events of that key stay pending; other keys go on.
 *
 * <p>Operations: {@link Builder#listener} receives metrics ({@code io.txoutbox.micrometer.MicrometerInboxListener}
 * for Micrometer), {@code io.txoutbox.micrometer.InboxMeterBinder} samples the inbox's gauges, {@link InboxAdmin}
 * lists and releases parked keys and dead events.
 */
public interface InboxWorker extends AutoCloseable {

    InboxWorker start();

    /** Wakes the lanes now (e.g. after a receive committed); cheap, never blocks. */
    void nudge();

    InboxStats stats();

    InboxWorkerConfig config();

    /** Stops the lanes after their current batch (bounded wait), releases locks and connections. Idempotent. */
    @Override
    void close();

    /** Counters of one worker since it started. */
    record InboxStats(long processed, long failedAttempts, long parked, long dead, long batches, long loopErrors,
            int lanesOwned) {
    }

    static Builder builder() {
        return new Builder();
    }

    /** Validating builder; {@link #build()} fails fast and names the property at fault. */
    final class Builder {
        private DataSource dataSource;
        private OutboxSchema schema = OutboxSchema.defaults();
        private String consumer;
        private String name = InboxWorkerConfig.DEFAULT_NAME;
        private final Map<String, InboxHandler> handlers = new LinkedHashMap<>();
        private InboxHandler defaultHandler;
        private int lanes = InboxWorkerConfig.DEFAULT_LANES;
        private int batchSize = InboxWorkerConfig.DEFAULT_BATCH_SIZE;
        private Duration pollInterval = InboxWorkerConfig.DEFAULT_POLL_INTERVAL;
        private final RetryDraft retry = new RetryDraft("inboxWorker", RetryPolicy.defaults());
        private FailurePolicy failurePolicy = InboxWorkerConfig.DEFAULT_FAILURE_POLICY;
        private Predicate<Throwable> permanentFailure = HandlerFailures::isPermanent;
        private InboxListener listener = InboxListener.none();
        private boolean logPartitionKeys = InboxWorkerConfig.DEFAULT_LOG_PARTITION_KEYS;
        private Duration leaseTimeout = InboxWorkerConfig.DEFAULT_LEASE_TIMEOUT;
        private Duration handlerTimeout = InboxWorkerConfig.DEFAULT_HANDLER_TIMEOUT;

        private Builder() {
        }

        /** Connections of its own: one per lane, held while the lane works. */
        public Builder dataSource(DataSource dataSource) {
            this.dataSource = dataSource;
            return this;
        }

        /** Where the outbox is, default {@link OutboxSchema#defaults()}; {@code null} is refused here. */
        public Builder schema(OutboxSchema schema) {
            this.schema = Checks.schema("inboxWorker", schema);
            return this;
        }

        /** The consumer whose rows this worker processes (required). */
        public Builder consumer(String consumer) {
            this.consumer = consumer;
            return this;
        }

        /** Names the worker in logs and thread names. */
        public Builder name(String name) {
            this.name = name;
            return this;
        }

        /** The handler for events of this type. */
        public Builder handler(String eventType, InboxHandler handler) {
            handlers.put(Objects.requireNonNull(eventType, "eventType"), Objects.requireNonNull(handler, "handler"));
            return this;
        }

        /** The handler for events of types without their own; without one, such events fail permanently. */
        public Builder defaultHandler(InboxHandler handler) {
            this.defaultHandler = handler;
            return this;
        }

        /** Lanes (threads), default {@value InboxWorkerConfig#DEFAULT_LANES}; the same in all workers of a consumer. */
        public Builder lanes(int lanes) {
            this.lanes = lanes;
            return this;
        }

        /** Events per transaction, default {@value InboxWorkerConfig#DEFAULT_BATCH_SIZE}. */
        public Builder batchSize(int batchSize) {
            this.batchSize = batchSize;
            return this;
        }

        public Builder pollInterval(Duration pollInterval) {
            this.pollInterval = pollInterval;
            return this;
        }

        /** Per-key retries, default {@link RetryPolicy#defaults()}. */
        public Builder retry(RetryPolicy retry) {
            this.retry.set(retry);
            return this;
        }

        /**
         * Applies settings by their names in {@link InboxWorkerConfig#DESCRIPTOR} ({@code "batch-size"} or
         * {@code "txoutbox.inbox-worker.batch-size"}), each value its text form ({@code "500"}, {@code "250ms"}) or
         * typed; an unknown name or an unreadable value fails and changes nothing.
         */
        public Builder settings(Map<String, ?> settings) {
            return InboxWorkerConfig.DESCRIPTOR.apply(this, settings);
        }

        RetryDraft retryDraft() {
            return retry;
        }

        public Builder failurePolicy(FailurePolicy failurePolicy) {
            this.failurePolicy = failurePolicy;
            return this;
        }

        /**
         * Write partition keys into log lines (default off: keys are often personal data, such as a customer id or an
         * e-mail address). Off, a line shows the key's tag instead ({@code #} and 8 hex digits, the same for a key
         * throughout one process, not reversible); the event id in the line leads to the key through
         * {@link InboxAdmin}.
         */
        public Builder logPartitionKeys(boolean logPartitionKeys) {
            this.logPartitionKeys = logPartitionKeys;
            return this;
        }

        /**
         * How long a lane stays owned by a worker that stopped answering (paused, cut off, frozen) before PostgreSQL
         * ends its session — rolling back the batch it was in, with its row locks — and another worker takes the
         * lane over; default 10 s, as the relay's. A crashed process is noticed at once.
         */
        public Builder leaseTimeout(Duration leaseTimeout) {
            this.leaseTimeout = leaseTimeout;
            return this;
        }

        /**
         * A handler's time budget, default 5 s, at most half of {@link #leaseTimeout}: a handler that runs longer
         * fails its event (a failed attempt, retried, then parked or dead per the policies; its effects are rolled
         * back to the event's savepoint) and the rest of the batch goes on. At the budget the lane's thread is
         * interrupted; each of the handler's statements is bounded by it too ({@code statement_timeout}).
         */
        public Builder handlerTimeout(Duration handlerTimeout) {
            this.handlerTimeout = handlerTimeout;
            return this;
        }

        /** Which handler exceptions fail an event at once, without retries; see {@link InboxHandler}. */
        public Builder permanentFailure(Predicate<Throwable> permanentFailure) {
            this.permanentFailure = permanentFailure;
            return this;
        }

        /**
         * Receives the worker's events for metrics (batches and their timings, processed events with their handler
         * time and receive→processed latency, handler failures by kind, parked keys, dead events, loop errors);
         * default none. For Micrometer: {@code new io.txoutbox.micrometer.MicrometerInboxListener(registry)}. Its
         * callbacks run on the lanes' threads and must not block; whatever they throw is caught and logged once.
         */
        public Builder listener(InboxListener listener) {
            this.listener = listener;
            return this;
        }

        /**
         * The configuration {@link #build()} would use, validated (the data source and listener are not part of it),
         * e.g. to size the worker's pool by its lanes before building it.
         */
        public InboxWorkerConfig config() {
            return new InboxWorkerConfig(schema, consumer, name, handlers, defaultHandler, lanes, batchSize,
                    pollInterval, retry.toPolicy(), failurePolicy, permanentFailure, logPartitionKeys, leaseTimeout,
                    handlerTimeout);
        }

        public InboxWorker build() {
            if (dataSource == null) {
                throw new InvalidConfigurationException("inboxWorker.dataSource is required: the worker claims and "
                        + "processes rows through connections of its own");
            }
            InboxWorkerConfig config = config();
            if (listener == null) {
                throw new InvalidConfigurationException("inboxWorker.listener must not be null; leave it unset for "
                        + "none");
            }
            return new DefaultInboxWorker(config, dataSource, listener);
        }
    }
}
