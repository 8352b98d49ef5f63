package io.txoutbox.internal.relay;

import io.txoutbox.RelayConfig;
import io.txoutbox.internal.ListenerGuard;
import io.txoutbox.spi.RelayListener;
import io.txoutbox.spi.SendResult;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Calls the user's {@link RelayListener} so that it can never break a lane: whatever a callback throws is caught,
 * counted, and logged once ({@link ListenerGuard}).
 */
final class GuardedListener implements RelayListener {

    private static final Logger log = LoggerFactory.getLogger(GuardedListener.class);

    private final RelayListener delegate;
    private final ListenerGuard guard;

    GuardedListener(RelayListener delegate, String relay) {
        this.delegate = delegate;
        this.guard = new ListenerGuard(log, "txoutbox-relay " + relay, "relay", delegate);
    }

    long failures() {
        return guard.failures();
    }

    @Override
    public void relayStarted(RelayConfig config) {
        try {
            delegate.relayStarted(config);
        } catch (Throwable t) {
            guard.failed("relayStarted", t);
        }
    }

    @Override
    public void batchCompleted(int size, long claimNanos, long sendNanos, long markNanos) {
        try {
            delegate.batchCompleted(size, claimNanos, sendNanos, markNanos);
        } catch (Throwable t) {
            guard.failed("batchCompleted", t);
        }
    }

    @Override
    public void published(String topic, long commitToAckNanos) {
        try {
            delegate.published(topic, commitToAckNanos);
        } catch (Throwable t) {
            guard.failed("published", t);
        }
    }

    @Override
    public void sendFailed(String topic, SendResult.Kind kind) {
        try {
            delegate.sendFailed(topic, kind);
        } catch (Throwable t) {
            guard.failed("sendFailed", t);
        }
    }

    @Override
    public void keyParked(String topic) {
        try {
            delegate.keyParked(topic);
        } catch (Throwable t) {
            guard.failed("keyParked", t);
        }
    }

    @Override
    public void deadLettered(String topic) {
        try {
            delegate.deadLettered(topic);
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
