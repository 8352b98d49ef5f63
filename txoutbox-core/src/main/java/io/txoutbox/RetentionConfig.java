package io.txoutbox;

import io.txoutbox.internal.config.Checks;
import io.txoutbox.internal.config.DescriptorBuilder;
import io.txoutbox.internal.config.Values;
import java.time.Duration;

/**
 * The retention job's validated, immutable configuration; see {@link OutboxRetention.Builder} for what each value
 * does. The DataSource and the Clock are dependencies, not settings: they stay in the builder.
 * {@code processedEventRetention} and {@code inboxRetention} are both null (no inbox retention) or both set.
 */
public record RetentionConfig(
        OutboxSchema schema,
        Duration retention,
        int batchSize,
        Duration pauseBetweenBatches,
        Duration interval,
        Duration lockTimeout,
        Duration statementTimeout,
        Duration closeTimeout,
        Duration processedEventRetention,
        Duration inboxRetention) {

    public static final Duration DEFAULT_RETENTION = Duration.ofDays(7);
    public static final int DEFAULT_BATCH_SIZE = 5_000;
    public static final int MAX_BATCH_SIZE = 100_000;
    public static final Duration DEFAULT_PAUSE_BETWEEN_BATCHES = Duration.ofMillis(20);
    public static final Duration DEFAULT_INTERVAL = Duration.ofHours(1);
    public static final Duration DEFAULT_LOCK_TIMEOUT = Duration.ofSeconds(1);
    public static final Duration DEFAULT_STATEMENT_TIMEOUT = Duration.ofSeconds(30);
    public static final Duration DEFAULT_CLOSE_TIMEOUT = Duration.ofSeconds(10);

    /** Every setting of the retention job ({@code txoutbox.retention.*}). */
    public static final ConfigDescriptor<OutboxRetention.Builder, RetentionConfig> DESCRIPTOR =
            DescriptorBuilder.<OutboxRetention.Builder, RetentionConfig>define("retention")
                    .add("retention", Duration.class, DEFAULT_RETENTION, "", "How long published rows are kept",
                            OutboxRetention.Builder::retention, RetentionConfig::retention)
                    .add("batchSize", Integer.class, DEFAULT_BATCH_SIZE, "rows", "Ids per range, so at most this "
                            + "many rows per delete transaction (1 to " + MAX_BATCH_SIZE + ")",
                            OutboxRetention.Builder::batchSize, RetentionConfig::batchSize)
                    .add("pauseBetweenBatches", Duration.class, DEFAULT_PAUSE_BETWEEN_BATCHES, "", "Pause after "
                            + "each batch that deleted something", OutboxRetention.Builder::pauseBetweenBatches,
                            RetentionConfig::pauseBetweenBatches)
                    .add("interval", Duration.class, DEFAULT_INTERVAL, "", "Time between the end of one background "
                            + "run and the start of the next", OutboxRetention.Builder::interval,
                            RetentionConfig::interval)
                    .add("lockTimeout", Duration.class, DEFAULT_LOCK_TIMEOUT, "", "lock_timeout of a batch (and of "
                            + "a partition detach); a batch that waits longer is left for the next run",
                            OutboxRetention.Builder::lockTimeout, RetentionConfig::lockTimeout)
                    .add("statementTimeout", Duration.class, DEFAULT_STATEMENT_TIMEOUT, "", "statement_timeout of "
                            + "a batch's statements", OutboxRetention.Builder::statementTimeout,
                            RetentionConfig::statementTimeout)
                    .add("closeTimeout", Duration.class, DEFAULT_CLOSE_TIMEOUT, "", "How long close() waits for the "
                            + "run in flight before interrupting it", OutboxRetention.Builder::closeTimeout,
                            RetentionConfig::closeTimeout)
                    .add("processedEventRetention", Duration.class, null, "", "With inbox-retention: also purge "
                            + "processed_event rows older than this in every run",
                            OutboxRetention.Builder::processedEventRetention,
                            RetentionConfig::processedEventRetention)
                    .add("inboxRetention", Duration.class, null, "", "With processed-event-retention: also purge "
                            + "PROCESSED inbox rows older than this in every run",
                            OutboxRetention.Builder::inboxRetention, RetentionConfig::inboxRetention)
                    .build();

    public RetentionConfig {
        Checks.schema("retention", schema);
        Checks.notNegative("retention.retention", retention);
        Checks.between("retention.batchSize", batchSize, 1, MAX_BATCH_SIZE);
        Checks.notNegative("retention.pauseBetweenBatches", pauseBetweenBatches);
        Checks.atLeast("retention.interval", interval, Duration.ofMillis(1));
        Checks.atLeast("retention.lockTimeout", lockTimeout, Duration.ofMillis(1));
        Checks.atLeast("retention.statementTimeout", statementTimeout, Duration.ofMillis(1));
        Checks.notNegative("retention.closeTimeout", closeTimeout);
        if ((processedEventRetention == null) != (inboxRetention == null)) {
            throw Checks.invalid("retention.inboxRetention", "needs both ages, was processed_event "
                    + Values.format(processedEventRetention) + " and inbox_event " + Values.format(inboxRetention)
                    + ": set retention.processedEventRetention too");
        }
        if (processedEventRetention != null) {
            Checks.notNegative("retention.processedEventRetention", processedEventRetention);
            Checks.notNegative("retention.inboxRetention", inboxRetention);
        }
    }

    /** Whether each run also purges the inbox tables. */
    public boolean purgesInbox() {
        return processedEventRetention != null;
    }
}
