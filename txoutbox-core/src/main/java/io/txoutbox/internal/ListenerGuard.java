package io.txoutbox.internal;

import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.LongAdder;
import org.slf4j.Logger;

/**
 * What the guarded listeners of the relay and the inbox worker share: a callback that threw is counted and logged
 * once (the first time, with its stack trace; later ones at debug level), and the component goes on.
 */
public final class ListenerGuard {

    private final Logger log;
    private final String prefix;
    private final String component;
    private final String listener;
    private final AtomicBoolean logged = new AtomicBoolean();
    private final LongAdder failures = new LongAdder();

    /**
     * @param prefix    the component's log prefix with its name, e.g. {@code txoutbox-relay orders}
     * @param component what goes on, for the message, e.g. {@code relay}
     * @param listener  the guarded listener, named in the message
     */
    public ListenerGuard(Logger log, String prefix, String component, Object listener) {
        this.log = log;
        this.prefix = prefix;
        this.component = component;
        this.listener = listener.getClass().getName();
    }

    public long failures() {
        return failures.sum();
    }

    /** Counts and logs a throw from {@code callback}; never throws itself. */
    public void failed(String callback, Throwable t) {
        failures.increment();
        if (logged.compareAndSet(false, true)) {
            log.error("{}: listener {} threw from {}; the {} ignores it and goes on (logged once; fix the listener)",
                    prefix, listener, callback, component, t);
        } else if (log.isDebugEnabled()) {
            log.debug("{}: listener threw again from {}: {}", prefix, callback, t.toString());
        }
    }
}
