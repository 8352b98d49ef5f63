package io.txoutbox.it;

import io.txoutbox.OutboxSchema;

/**
 * {@link RelayCrashIT} on the cursor progress model: a lane's next owner starts at its cursor, so the restart sends
 * again what the killed relay delivered since its last settlement, not only its batch in flight.
 * The fault tests of the cursor model are classes of their own so that the build's two test JVMs share them out.
 */
class RelayCrashCursorIT extends RelayCrashIT {

    @Override
    OutboxSchema.Progress progress() {
        return OutboxSchema.Progress.CURSOR;
    }
}
