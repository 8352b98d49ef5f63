package io.txoutbox.test;

import static org.awaitility.Awaitility.await;

import io.txoutbox.OutboxSchema;
import io.txoutbox.internal.progress.ProgressModels;
import java.time.Duration;
import java.util.Collection;
import java.util.UUID;
import java.util.stream.Collectors;

/**
 * The time-partitioned outbox's scenarios on the cursor progress model: a partition is dropped only when none of its
 * events is pending as the cursors read them (a stuck key's held and backing-off rows keep it), dead rows move to
 * the default partition, and a conversion of a table with rows keeps its pending events.
 */
class CursorPartitionedOutboxIT extends PartitionedOutboxIT {

    @Override
    protected OutboxSchema.Builder schema() {
        return super.schema().progress(OutboxSchema.Progress.CURSOR);
    }

    /** The cursors follow the deliveries by a settlement or two. */
    @Override
    protected void awaitRecorded(OutboxSchema s, Collection<UUID> ids) {
        if (ids.isEmpty()) {
            return;
        }
        String list = ids.stream().map(id -> "'" + id + "'").collect(Collectors.joining(","));
        await().atMost(Duration.ofSeconds(60)).until(() -> db().queryLong("SELECT count(*) FROM "
                + s.qualifiedOutboxTable() + " o WHERE o.event_id IN (" + list + ") AND NOT "
                + ProgressModels.of(s).published("o")) == 0);
    }
}
