package io.txoutbox.spring.internal;

import io.txoutbox.PollingRelay;
import java.util.Objects;
import org.springframework.beans.factory.DisposableBean;
import org.springframework.context.SmartLifecycle;

/**
 * Runs the relay with the application context: started once every singleton is ready (so after Flyway, Liquibase
 * or the starter's own migration), before the web server takes requests, and stopped after the web server drained
 * them (its phase is below the web server's). {@link #stop()} closes the relay, which waits for the batches in flight
 * for a bounded time and releases its lanes for a standby to take over.
 */
public final class RelayLifecycle implements SmartLifecycle, DisposableBean {

    /** Starts before and stops after the web server (whose phase is {@code DEFAULT_PHASE - 1024}). */
    public static final int PHASE = SmartLifecycle.DEFAULT_PHASE - 2048;

    private final PollingRelay relay;
    private final AutoCloseable pool;
    private volatile boolean running;

    /** {@code pool}: the relay's own connections, closed after the relay (null: the relay's DataSource is a bean). */
    public RelayLifecycle(PollingRelay relay, AutoCloseable pool) {
        this.relay = Objects.requireNonNull(relay, "relay");
        this.pool = pool;
    }

    public PollingRelay relay() {
        return relay;
    }

    /** Wakes the relay's lanes (after a commit that published); does nothing before start or after stop. */
    public void nudge() {
        if (running) {
            relay.nudge();
        }
    }

    @Override
    public synchronized void start() {
        if (!running) {
            relay.start();
            running = true;
        }
    }

    @Override
    public synchronized void stop() {
        if (running) {
            running = false;
            relay.close();
        }
    }

    /** Also when the context failed before the relay started: the relay (idempotent), then its pool. */
    @Override
    public void destroy() throws Exception {
        stop();
        relay.close();
        if (pool != null) {
            pool.close();
        }
    }

    @Override
    public boolean isRunning() {
        return running;
    }

    @Override
    public int getPhase() {
        return PHASE;
    }
}
