package io.txoutbox.internal.inbox;

import java.time.Duration;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

/**
 * The handler time budget's timer: interrupts a lane's thread whose handler runs past the budget, so a handler
 * that waits in Java (a sleep, a lock, an HTTP client that honours interrupts) gives up. A handler's database
 * statements are bounded by the lane session's {@code statement_timeout} (the budget) instead: a cancel request
 * sent from here could land on the lane's next statement. One daemon thread per worker.
 */
final class HandlerWatchdog implements AutoCloseable {

    private final ScheduledThreadPoolExecutor timer;

    HandlerWatchdog(String workerName) {
        timer = new ScheduledThreadPoolExecutor(1, r -> {
            Thread t = new Thread(r, "txoutbox-inbox-" + workerName + "-watchdog");
            t.setDaemon(true);
            return t;
        });
        timer.setRemoveOnCancelPolicy(true);
    }

    /** Starts the budget of a handler about to run on the calling thread. */
    Ticket arm(Duration budget) {
        Ticket ticket = new Ticket(Thread.currentThread());
        try {
            ticket.future = timer.schedule(ticket::fire, budget.toNanos(), TimeUnit.NANOSECONDS);
        } catch (RejectedExecutionException closed) {
            // the worker is closed and a lane still finishes its batch: the elapsed time still fails a slow event
        }
        return ticket;
    }

    @Override
    public void close() {
        timer.shutdownNow();
    }

    /** One handler call's budget. */
    static final class Ticket {
        private final Thread thread;
        private ScheduledFuture<?> future;
        private boolean done;
        private boolean fired;

        private Ticket(Thread thread) {
            this.thread = thread;
        }

        private synchronized void fire() {
            if (!done) {
                fired = true;
                thread.interrupt();
            }
        }

        /**
         * Ends the budget once the handler returned, on the lane's thread; returns whether it ran out. An interrupt
         * of the watchdog's own is cleared here, never left for the lane's next wait to find.
         */
        synchronized boolean disarm() {
            done = true;
            if (future != null) {
                future.cancel(false);
            }
            if (fired) {
                Thread.interrupted();
            }
            return fired;
        }
    }
}
