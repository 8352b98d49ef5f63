package io.txoutbox.it;

import io.txoutbox.OutboxSchema;

/**
 * {@link PostgresRestartIT} on the cursor progress model, plain table.
 * The fault tests of the cursor model are classes of their own so that the build's two test JVMs share them out.
 */
class PostgresRestartCursorIT extends PostgresRestartIT {

    @Override
    OutboxSchema.Progress progress() {
        return OutboxSchema.Progress.CURSOR;
    }
}
