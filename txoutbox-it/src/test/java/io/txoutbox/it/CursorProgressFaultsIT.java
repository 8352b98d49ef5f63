package io.txoutbox.it;

import io.txoutbox.OutboxSchema;
import org.junit.jupiter.api.Nested;

/**
 * The process-kill and broker fault tests on the cursor progress model ({@code schema.progress=CURSOR},
 * docs/progress-models.md): the same scenarios, the relay processes and the tests' own reads on that model. A lane's
 * next owner starts at its cursor, so a kill sends again what the victim delivered since its last settlement, not
 * only its batch in flight; each scenario bounds its duplicates by what the progress had not recorded. Every
 * scenario of {@link ScaleOutIT}, {@link RelayCrashIT} and {@link BrokerOutageIT}.
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
}
