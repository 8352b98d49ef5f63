package io.txoutbox.it;

import io.txoutbox.OutboxSchema;

/**
 * {@link ScaleOutIT} on the cursor progress model: a lane's next owner starts at its cursor, so a kill sends again what
 * the victim delivered since its last settlement; each scenario bounds its duplicates by what the progress had not
 * recorded. The build runs the kill and the pause scenarios; all six with {@code -Dtxoutbox.it.cursor-scale-out=all}
 * ({@link ScaleOutIT#cursorScenarioSkipped}).
 * The fault tests of the cursor model are classes of their own so that the build's two test JVMs share them out.
 */
class ScaleOutCursorIT extends ScaleOutIT {

    @Override
    OutboxSchema.Progress progress() {
        return OutboxSchema.Progress.CURSOR;
    }
}
