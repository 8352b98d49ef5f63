package io.txoutbox.spring.internal;

import io.txoutbox.InboxWorker;

/** The inbox worker as a lifecycle bean ({@link ComponentLifecycle}); receivers nudge it after their commits. */
public final class InboxWorkerLifecycle extends ComponentLifecycle<InboxWorker> {

    public InboxWorkerLifecycle(InboxWorker worker, AutoCloseable pool) {
        super(worker, InboxWorker::start, InboxWorker::nudge, pool);
    }

    public InboxWorker worker() {
        return component();
    }
}
