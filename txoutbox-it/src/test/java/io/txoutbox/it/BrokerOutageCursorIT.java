package io.txoutbox.it;

import io.txoutbox.OutboxSchema;

/**
 * {@link BrokerOutageIT} on the cursor progress model.
 * The fault tests of the cursor model are classes of their own so that the build's two test JVMs share them out.
 */
class BrokerOutageCursorIT extends BrokerOutageIT {

    @Override
    OutboxSchema.Progress progress() {
        return OutboxSchema.Progress.CURSOR;
    }
}
