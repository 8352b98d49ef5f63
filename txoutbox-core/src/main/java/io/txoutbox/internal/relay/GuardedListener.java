package io.txoutbox.internal.relay;

import io.txoutbox.RelayConfig;
import io.txoutbox.spi.RelayListener;
import io.txoutbox.spi.SendResult;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.LongAdder;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Calls the user's {@link RelayListener} so that it can never break a lane: whatever a callback throws is caught,
 * counted, and logged once (the first time, with its stack trace; later ones at debug level).
 */
final class GuardedListener implements RelayListener {

    private static final Logger log = LoggerFactory.getLogger(GuardedListener.class);

    private final RelayListener delegate;
    private final String relay;
    private final AtomicBoolean logged = new AtomicBoolean();
    private final LongAdder failures = new LongAdder();

    GuardedListener(RelayListener delegate, String relay) {
        this.delegate = delegate;
        this.relay = relay;
    }

    long failures() {
        return failures.sum();
    }

    private void failed(String callback, Throwable t) {
        failures.increment();
        if (logged.compareAndSet(false, true)) {
            log.error("txoutbox-relay {}: listener {} threw from {}; the relay ignores it and goes on (logged once; "
                    + "fix the listener)", relay, delegate.getClass().getName(), callback, t);
        } else if (log.isDebugEnabled()) {
            log.debug("txoutbox-relay {}: listener threw again from {}: {}", relay, callback, t.toString());
        }
    }

    @Override
    public void relayStarted(RelayConfig config) {
        try {
            delegate.relayStarted(config);
        } catch (Throwable t) {
            failed("relayStarted", t);
        }
    }

    @Override
    public void batchCompleted(int size, long claimNanos, long sendNanos, long markNanos) {
        try {
            delegate.batchCompleted(size, claimNanos, sendNanos, markNanos);
        } catch (Throwable t) {
            failed("batchCompleted", t);
        }
    }

    @Override
    public void published(String topic, long commitToAckNanos) {
        try {
            delegate.published(topic, commitToAckNanos);
        } catch (Throwable t) {
            failed("published", t);
        }
    }

    @Override
    public void sendFailed(String topic, SendResult.Kind kind) {
        try {
            delegate.sendFailed(topic, kind);
        } catch (Throwable t) {
            failed("sendFailed", t);
        }
    }

    @Override
    public void keyParked(String topic) {
        try {
            delegate.keyParked(topic);
        } catch (Throwable t) {
            failed("keyParked", t);
        }
    }

    @Override
    public void deadLettered(String topic) {
        try {
            delegate.deadLettered(topic);
        } catch (Throwable t) {
            failed("deadLettered", t);
        }
    }

    @Override
    public void loopFailed(Throwable error) {
        try {
            delegate.loopFailed(error);
        } catch (Throwable t) {
            failed("loopFailed", t);
        }
    }
}
