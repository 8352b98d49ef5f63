package io.txoutbox.spring.internal;

import java.util.Objects;
import java.util.function.Consumer;
import org.springframework.beans.factory.DisposableBean;
import org.springframework.context.SmartLifecycle;

/**
 * Runs a txoutbox component (the relay, the inbox worker) with the application context: started once every singleton
 * is ready (so after Flyway, Liquibase or the starter's own migration), before the web server takes requests, and
 * stopped after the web server drained them (its phase is below the web server's). {@link #stop()} closes the
 * component, which waits for the work in flight for a bounded time and releases its lanes for a standby; then its
 * own pool is closed.
 */
public class ComponentLifecycle<T extends AutoCloseable> implements SmartLifecycle, DisposableBean {

    /** Starts before and stops after the web server (whose phase is {@code DEFAULT_PHASE - 1024}). */
    public static final int PHASE = SmartLifecycle.DEFAULT_PHASE - 2048;

    private final T component;
    private final Consumer<T> start;
    private final Consumer<T> nudge;
    private final AutoCloseable pool;
    private volatile boolean running;

    /** {@code pool}: the component's own connections, closed after it (null: its DataSource is a bean). */
    protected ComponentLifecycle(T component, Consumer<T> start, Consumer<T> nudge, AutoCloseable pool) {
        this.component = Objects.requireNonNull(component, "component");
        this.start = start;
        this.nudge = nudge;
        this.pool = pool;
    }

    protected T component() {
        return component;
    }

    /** Wakes the component's lanes (after a commit that wrote work for it); nothing before start or after stop. */
    public void nudge() {
        if (running) {
            nudge.accept(component);
        }
    }

    @Override
    public synchronized void start() {
        if (!running) {
            start.accept(component);
            running = true;
        }
    }

    @Override
    public synchronized void stop() {
        if (running) {
            running = false;
            closeComponent();
        }
    }

    /** Also when the context failed before the component started: the component (idempotent), then its pool. */
    @Override
    public void destroy() throws Exception {
        stop();
        closeComponent();
        if (pool != null) {
            pool.close();
        }
    }

    private void closeComponent() {
        try {
            component.close();
        } catch (Exception e) {
            throw new IllegalStateException("closing " + component + " failed", e);
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
