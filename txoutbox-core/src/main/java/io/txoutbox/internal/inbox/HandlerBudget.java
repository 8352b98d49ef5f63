package io.txoutbox.internal.inbox;

import io.txoutbox.InboxEvent;
import io.txoutbox.InboxWorkerConfig;
import io.txoutbox.OutboxException;

/** The failure of an event whose handler ran past {@link InboxWorkerConfig#handlerTimeout()}: a transient one. */
final class HandlerBudget {

    private HandlerBudget() {
    }

    /** {@code thrown}: what the handler threw once interrupted or cut off (kept as suppressed), or null. */
    static OutboxException exceeded(InboxWorkerConfig config, InboxEvent e, long elapsedNanos, Throwable thrown) {
        OutboxException failure = new OutboxException("the handler for event type '" + e.eventType() + "' ran "
                + elapsedNanos / 1_000_000 + " ms, longer than inboxWorker.handlerTimeout ("
                + config.handlerTimeout().toMillis() + " ms): the event counts a failed attempt and its effects are"
                + " rolled back; make the handler faster or raise handlerTimeout (and leaseTimeout, at least twice"
                + " it)", null, true);
        if (thrown != null) {
            failure.addSuppressed(thrown);
        }
        return failure;
    }
}
