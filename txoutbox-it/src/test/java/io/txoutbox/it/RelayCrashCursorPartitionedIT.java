package io.txoutbox.it;

import io.txoutbox.OutboxPartitioning;
import io.txoutbox.OutboxSchema;

/**
 * {@link RelayCrashIT} on the cursor progress model and a daily-partitioned table: the relay SIGKILLed between the
 * broker's ack and the mark, restarted; the resend is exactly what it delivered and its cursors had not recorded.
 */
class RelayCrashCursorPartitionedIT extends RelayCrashIT {

    @Override
    OutboxSchema.Progress progress() {
        return OutboxSchema.Progress.CURSOR;
    }

    @Override
    OutboxPartitioning.Period partitioning() {
        return OutboxPartitioning.Period.DAY;
    }
}
