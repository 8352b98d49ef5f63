package io.txoutbox.internal.inbox;

import io.txoutbox.InboxWorkerConfig;
import io.txoutbox.internal.ListenerGuard;
import io.txoutbox.spi.InboxListener;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Calls the user's {@link InboxListener} so that it can never break a lane: whatever a callback throws is caught,
 * counted, and logged once ({@link ListenerGuard}).
 */
final class GuardedInboxListener implements InboxListener {

    private static final Logger log = LoggerFactory.getLogger(GuardedInboxListener.class);

    private final InboxListener delegate;
    private final ListenerGuard guard;

    GuardedInboxListener(InboxListener delegate, String worker) {
        this.delegate = delegate;
        this.guard = new ListenerGuard(log, "txoutbox-inbox " + worker, "worker", delegate);
    }

    long failures() {
        return guard.failures();
    }

    @Override
    public void workerStarted(InboxWorkerConfig config) {
        try {
            delegate.workerStarted(config);
        } catch (Throwable t) {
            guard.failed("workerStarted", t);
        }
    }

    @Override
    public void batchCompleted(int size, long claimNanos, long handleNanos, long markNanos) {
        try {
            delegate.batchCompleted(size, claimNanos, handleNanos, markNanos);
        } catch (Throwable t) {
            guard.failed("batchCompleted", t);
        }
    }

    @Override
    public void processed(String eventType, long handlerNanos, long receiveToProcessedNanos) {
        try {
            delegate.processed(eventType, handlerNanos, receiveToProcessedNanos);
        } catch (Throwable t) {
            guard.failed("processed", t);
        }
    }

    @Override
    public void handlerFailed(String eventType, FailureKind kind) {
        try {
            delegate.handlerFailed(eventType, kind);
        } catch (Throwable t) {
            guard.failed("handlerFailed", t);
        }
    }

    @Override
    public void keyParked(String eventType) {
        try {
            delegate.keyParked(eventType);
        } catch (Throwable t) {
            guard.failed("keyParked", t);
        }
    }

    @Override
    public void deadLettered(String eventType) {
        try {
            delegate.deadLettered(eventType);
        } catch (Throwable t) {
            guard.failed("deadLettered", t);
        }
    }

    @Override
    public void loopFailed(Throwable error) {
        try {
            delegate.loopFailed(error);
        } catch (Throwable t) {
            guard.failed("loopFailed", t);
        }
    }
}
