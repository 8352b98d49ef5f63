package io.txoutbox.test;

import io.txoutbox.OutboxSchema;

/**
 * The whole relay acceptance suite, and the in-memory transport's own scenarios, on tables with
 * {@code schema.progress=CURSOR} (docs/progress-models.md): the relay, the admin and the status readers take the
 * cursor model from the schema, and the suite counts published rows as that model records them.
 */
class CursorProgressRelayIT extends PollingRelayInMemoryIT {

    @Override
    protected OutboxSchema.Progress progress() {
        return OutboxSchema.Progress.CURSOR;
    }

    /**
     * The cursor model's way to put a row back by hand: with a {@code next_attempt_at} (due), as {@code OutboxAdmin}
     * does. A row put back without one below the cursor reads as published, and no claim looks there (the row-state
     * model's sweep has no equivalent: the cursor, not the row, says a happy-path row went out).
     */
    @Override
    protected String putBackByHand() {
        return "state = 'PENDING', next_attempt_at = now()";
    }
}
