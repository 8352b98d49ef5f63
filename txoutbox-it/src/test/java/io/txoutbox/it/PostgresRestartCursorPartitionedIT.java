package io.txoutbox.it;

import io.txoutbox.OutboxPartitioning;
import io.txoutbox.OutboxSchema;

/**
 * {@link PostgresRestartIT} on the cursor progress model and a daily-partitioned table: the cursor's claim and
 * settlement read across partitions.
 * The fault tests of the cursor model are classes of their own so that the build's two test JVMs share them out.
 */
class PostgresRestartCursorPartitionedIT extends PostgresRestartIT {

    @Override
    OutboxSchema.Progress progress() {
        return OutboxSchema.Progress.CURSOR;
    }

    @Override
    OutboxPartitioning.Period partitioning() {
        return OutboxPartitioning.Period.DAY;
    }
}
