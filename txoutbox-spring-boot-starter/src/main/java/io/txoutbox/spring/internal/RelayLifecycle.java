package io.txoutbox.spring.internal;

import io.txoutbox.PollingRelay;

/**
 * The relay as a lifecycle bean ({@link ComponentLifecycle}); publishers nudge the lanes of the shards they wrote after
 * their commits.
 */
public final class RelayLifecycle extends ComponentLifecycle<PollingRelay> {

    public RelayLifecycle(PollingRelay relay, AutoCloseable pool) {
        super(relay, PollingRelay::start, PollingRelay::nudge, pool);
    }

    public PollingRelay relay() {
        return component();
    }

    /** Wakes the lane of {@code shard} (after a commit that wrote to it); nothing before start or after stop. */
    public void nudge(int shard) {
        if (isRunning()) {
            component().nudge(shard);
        }
    }
}
