package io.txoutbox;

import io.txoutbox.internal.config.Checks;
import io.txoutbox.internal.retention.DefaultOutboxRetention;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import javax.sql.DataSource;

/**
 * Deletes published outbox rows older than a retention, in small batches that never hold writers up.
 *
 * <pre>{@code
 * OutboxRetention retention = OutboxRetention.builder()
 *         .dataSource(dataSource).schema(schema)
 *         .retention(Duration.ofDays(7))            // PUBLISHED rows published longer ago than this go
 *         .interval(Duration.ofHours(1))
 *         .build().start();                         // first run now, then every interval; close() stops it
 * OutboxRetention.Result r = retention.runOnce();  // or run it from your own scheduler
 * }</pre>
 *
 * <p>A run walks the table's {@code id}s upward in ranges of {@code batchSize} (the BRIN index on {@code id} finds
 * a range's pages) and deletes, in one short transaction per range, the rows of the range that are {@code PUBLISHED}
 * with {@code published_at} before the cutoff. A batch locks at most {@code batchSize} rows that no writer and no
 * relay touches any more, and takes no lock a writer waits for; {@code lock_timeout} and {@code statement_timeout}
 * bound it. A range that cannot be deleted (a lock timeout) is left for the next run. The walk ends at the first row
 * created after the cutoff: ids are drawn in time order, so no later row can have been published before it.
 * {@code PENDING}, {@code PARKED}, {@code DEAD} and {@code DISCARDED} rows are never deleted. Of several instances
 * running retention on one table, one runs at a time (a session advisory lock); the others skip their run.
 *
 * <p>The cutoff is {@code clock.instant() - retention}; {@code published_at} is the database's clock.
 *
 * <p><b>Partitioned outbox</b> ({@link OutboxSchema.Builder#partitioned}): a run creates the partitions ahead and
 * drops each partition whose whole period ended before the cutoff (rows are kept for the retention plus up to one
 * period), with a drop that deletes nothing row by row. A partition that still holds PENDING rows is kept until the
 * relay has published them; its PARKED, DEAD and DISCARDED rows move, ids unchanged, to the default partition in the
 * transaction that drops it. The detach waits at most {@code lockTimeout} for the table's lock (writers queue behind
 * it for that long) and is retried by the next run. The batched delete then runs on the default partition only.
 */
public interface OutboxRetention extends AutoCloseable {

    /**
     * What one run removed: outbox rows {@code deleted} in {@code batches} transactions (the largest deleted
     * {@code largestBatch} rows), {@code failedBatches} ranges left for the next run, and what the inbox retention
     * purged ({@code null} when not configured). {@code anotherRunActive}: another session (another instance of the
     * service, say) was running the retention of this table, so this run did nothing.
     */
    record Result(Instant cutoff, long deleted, int batches, int largestBatch, int failedBatches,
            Partitions partitions, InboxAdmin.Purged inbox, boolean anotherRunActive) {
    }

    /**
     * What a run did to a partitioned outbox ({@code null} for a plain table): partitions {@code created} ahead,
     * expired ones {@code dropped}, the parked, dead and discarded rows {@code rowsMoved} out of them into the default
     * partition, why an expired partition was {@code kept} or a period not created (one line each; a partition with
     * pending rows waits for the relay), and the rows in the default partition ({@code defaultPartitionRows}, counted
     * up to a million: more than the moved rows means writes reached a period with no partition).
     */
    record Partitions(List<String> created, List<String> dropped, long rowsMoved, List<String> kept,
            long defaultPartitionRows) {
    }

    /** Runs the retention now, on the calling thread; runs of one instance never overlap. */
    Result runOnce();

    /** Deletes published rows published before {@code cutoff}; {@link #runOnce()} with an explicit cutoff. */
    Result deleteOlderThan(Instant cutoff);

    /** Starts the background job: a run now, then one every {@code interval} after the previous ended. */
    OutboxRetention start();

    /** Counters of the background job and of {@link #runOnce()} calls since this instance was built. */
    record Stats(long runs, long failedRuns, long deleted) {
    }

    Stats stats();

    /** Stops the job: the run in flight stops after its current batch (bounded by {@code closeTimeout}). Idempotent. */
    @Override
    void close();

    static Builder builder() {
        return new Builder();
    }

    /** The validated configuration this job runs with. */
    RetentionConfig config();

    /**
     * Validating builder; {@link #build()} fails fast and names the property at fault (the defaults are
     * {@link RetentionConfig}'s {@code DEFAULT_*}).
     */
    final class Builder {
        private DataSource dataSource;
        private OutboxSchema schema = OutboxSchema.defaults();
        private Duration retention = RetentionConfig.DEFAULT_RETENTION;
        private int batchSize = RetentionConfig.DEFAULT_BATCH_SIZE;
        private Duration pauseBetweenBatches = RetentionConfig.DEFAULT_PAUSE_BETWEEN_BATCHES;
        private Duration interval = RetentionConfig.DEFAULT_INTERVAL;
        private Duration lockTimeout = RetentionConfig.DEFAULT_LOCK_TIMEOUT;
        private Duration statementTimeout = RetentionConfig.DEFAULT_STATEMENT_TIMEOUT;
        private Duration closeTimeout = RetentionConfig.DEFAULT_CLOSE_TIMEOUT;
        private Clock clock = Clock.systemUTC();
        private Duration processedEventRetention;
        private Duration inboxRetention;

        private Builder() {
        }

        /** Where runs get their connection (one, for the length of a run). */
        public Builder dataSource(DataSource dataSource) {
            this.dataSource = dataSource;
            return this;
        }

        /** Where the outbox is, default {@link OutboxSchema#defaults()}; {@code null} is refused here. */
        public Builder schema(OutboxSchema schema) {
            this.schema = Checks.schema("retention", schema);
            return this;
        }

        /** How long published rows are kept (default 7 days). */
        public Builder retention(Duration retention) {
            this.retention = retention;
            return this;
        }

        /** Ids per range, so at most this many rows per delete transaction (default 5,000). */
        public Builder batchSize(int batchSize) {
            this.batchSize = batchSize;
            return this;
        }

        /** Pause after each batch that deleted something, to leave I/O to the writers (default 20 ms). */
        public Builder pauseBetweenBatches(Duration pause) {
            this.pauseBetweenBatches = pause;
            return this;
        }

        /** Time between the end of one background run and the start of the next (default 1 hour). */
        public Builder interval(Duration interval) {
            this.interval = interval;
            return this;
        }

        /** {@code lock_timeout} of a batch; a batch that waits longer is left for the next run (default 1 s). */
        public Builder lockTimeout(Duration lockTimeout) {
            this.lockTimeout = lockTimeout;
            return this;
        }

        /** {@code statement_timeout} of a batch's statements (default 30 s). */
        public Builder statementTimeout(Duration statementTimeout) {
            this.statementTimeout = statementTimeout;
            return this;
        }

        /** How long {@link #close()} waits for the run in flight before interrupting it (default 10 s). */
        public Builder closeTimeout(Duration closeTimeout) {
            this.closeTimeout = closeTimeout;
            return this;
        }

        /** The clock of the cutoff (default the system clock). */
        public Builder clock(Clock clock) {
            this.clock = clock;
            return this;
        }

        /**
         * Also purge the inbox tables in every run, with {@link InboxAdmin#purge}: {@code processed_event} rows older
         * than the first age and {@code PROCESSED} inbox rows older than the second (database clock). Off by default.
         */
        public Builder inboxRetention(Duration processedEventRetention, Duration inboxRetention) {
            this.processedEventRetention = processedEventRetention;
            this.inboxRetention = inboxRetention;
            return this;
        }

        /** The {@code processed_event} age of {@link #inboxRetention(Duration, Duration)}, set on its own. */
        public Builder processedEventRetention(Duration processedEventRetention) {
            this.processedEventRetention = processedEventRetention;
            return this;
        }

        /** The {@code PROCESSED} inbox row age of {@link #inboxRetention(Duration, Duration)}, set on its own. */
        public Builder inboxRetention(Duration inboxRetention) {
            this.inboxRetention = inboxRetention;
            return this;
        }

        /**
         * Applies settings by their names in {@link RetentionConfig#DESCRIPTOR} ({@code "batch-size"} or
         * {@code "txoutbox.retention.batch-size"}), as text or typed values; a bad one changes nothing.
         */
        public Builder settings(Map<String, ?> settings) {
            return RetentionConfig.DESCRIPTOR.apply(this, settings);
        }

        public OutboxRetention build() {
            if (dataSource == null) {
                throw new InvalidConfigurationException("retention.dataSource is required");
            }
            if (clock == null) {
                throw new InvalidConfigurationException("retention.clock must not be null");
            }
            return new DefaultOutboxRetention(dataSource, clock, new RetentionConfig(schema, retention, batchSize,
                    pauseBetweenBatches, interval, lockTimeout, statementTimeout, closeTimeout,
                    processedEventRetention, inboxRetention));
        }
    }
}
