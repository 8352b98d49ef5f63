package io.txoutbox.it;

import io.txoutbox.OutboxPartitioning;
import io.txoutbox.OutboxSchema;
import org.junit.jupiter.api.Nested;

/**
 * The process-kill and broker fault tests on the cursor progress model ({@code schema.progress=CURSOR},
 * docs/progress-models.md): the same scenarios, the relay processes and the tests' own reads on that model. A lane's
 * next owner starts at its cursor, so a kill sends again what the victim delivered since its last settlement, not
 * only its batch in flight; each scenario bounds its duplicates by what the progress had not recorded. Every
 * scenario of {@link ScaleOutIT}, {@link RelayCrashIT}, {@link BrokerOutageIT} and {@link PostgresRestartIT}, the last also
 * on a partitioned table.
 */
class CursorProgressFaultsIT {

    @Nested
    class RelayCrash extends RelayCrashIT {

        @Override
        OutboxSchema.Progress progress() {
            return OutboxSchema.Progress.CURSOR;
        }
    }

    @Nested
    class ScaleOut extends ScaleOutIT {

        @Override
        OutboxSchema.Progress progress() {
            return OutboxSchema.Progress.CURSOR;
        }
    }

    @Nested
    class BrokerOutage extends BrokerOutageIT {

        @Override
        OutboxSchema.Progress progress() {
            return OutboxSchema.Progress.CURSOR;
        }
    }

    @Nested
    class PostgresRestart extends PostgresRestartIT {

        @Override
        OutboxSchema.Progress progress() {
            return OutboxSchema.Progress.CURSOR;
        }
    }

    /** The crash on a daily-partitioned table: the cursor's claim and settlement read across partitions. */
    @Nested
    class PartitionedPostgresRestart extends PostgresRestartIT {

        @Override
        OutboxSchema.Progress progress() {
            return OutboxSchema.Progress.CURSOR;
        }

        @Override
        OutboxPartitioning.Period partitioning() {
            return OutboxPartitioning.Period.DAY;
        }
    }
}
