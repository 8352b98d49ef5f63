package io.txoutbox.spring.internal;

import io.txoutbox.PollingRelay;

/** The relay as a lifecycle bean ({@link ComponentLifecycle}); publishers nudge it after their commits. */
public final class RelayLifecycle extends ComponentLifecycle<PollingRelay> {

    public RelayLifecycle(PollingRelay relay, AutoCloseable pool) {
        super(relay, PollingRelay::start, PollingRelay::nudge, pool);
    }

    public PollingRelay relay() {
        return component();
    }
}
