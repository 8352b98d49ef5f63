package io.txoutbox.internal.inbox;

import io.txoutbox.InboxWorker;
import io.txoutbox.InboxWorkerConfig;
import io.txoutbox.OutboxException;
import io.txoutbox.OutboxGrants;
import io.txoutbox.internal.BackendCheck;
import io.txoutbox.internal.Privileges;
import io.txoutbox.internal.pg.ReadCommitted;
import io.txoutbox.internal.pg.InboxStatements;
import io.txoutbox.internal.pg.PgErrors;
import io.txoutbox.spi.InboxListener;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** The inbox worker: its lanes, their threads, and an orderly close. */
public final class DefaultInboxWorker implements InboxWorker {

    private static final Logger log = LoggerFactory.getLogger(DefaultInboxWorker.class);
    private static final long CLOSE_WAIT_MS = 30_000;

    private final InboxWorkerConfig config;
    private final InboxCounters counters = new InboxCounters();
    private final GuardedInboxListener listener;
    private final List<WorkerLane> lanes = new ArrayList<>();
    private final List<Thread> threads = new ArrayList<>();
    private final AtomicBoolean started = new AtomicBoolean();
    private final AtomicBoolean closed = new AtomicBoolean();
    private final AtomicBoolean denied = new AtomicBoolean();
    private final DataSource dataSource;
    private final HandlerWatchdog watchdog;

    public DefaultInboxWorker(InboxWorkerConfig config, DataSource dataSource) {
        this(config, dataSource, InboxListener.none());
    }

    public DefaultInboxWorker(InboxWorkerConfig config, DataSource dataSource, InboxListener listener) {
        this.config = config;
        this.dataSource = dataSource;
        this.listener = new GuardedInboxListener(listener, config.name());
        InboxStatements statements = new InboxStatements(config.schema().schema());
        this.watchdog = new HandlerWatchdog(config.name());
        for (int i = 0; i < config.lanes(); i++) {
            lanes.add(new WorkerLane(config, i, dataSource, statements, counters, this.listener, this::denied,
                    watchdog));
        }
    }

    @Override
    public InboxWorker start() {
        if (closed.get()) {
            throw new OutboxException("inbox worker " + config.name() + " is closed; build a new one");
        }
        if (started.get()) {
            return this;
        }
        Privileges.requireAtStart(dataSource, config.schema(), "inbox worker '" + config.name() + "'", log,
                List.of(OutboxGrants.Component.INBOX_WORKER));
        if (!started.compareAndSet(false, true)) {
            return this;
        }
        log.info("txoutbox-inbox {}: starting with {} (schema {}, handlers {}{})", config.name(),
                InboxWorkerConfig.DESCRIPTOR.describe(config), config.schema().schema(), config.handlers().keySet(),
                config.defaultHandler() != null ? " and a default handler" : "");
        listener.workerStarted(config);
        for (WorkerLane lane : lanes) {
            Thread t = new Thread(lane, "txoutbox-inbox-" + lane.id());
            t.setDaemon(true);
            threads.add(t);
            t.start();
        }
        return this;
    }

    /** A lane met "permission denied" (42501) outside a handler: the worker stops all lanes, once, and says why. */
    private void denied(Throwable cause) {
        if (!denied.compareAndSet(false, true)) {
            return;
        }
        if (BackendCheck.isMismatch(cause)) {
            stopAll("inbox worker '" + config.name() + "' stopped: " + BackendCheck.message(cause), cause);
            return;
        }
        List<String> missing = List.of();
        try (Connection c = ReadCommitted.open(dataSource)) {
            missing = Privileges.missing(c, config.schema(), OutboxGrants.Component.INBOX_WORKER);
        } catch (SQLException | RuntimeException e) {
            log.debug("txoutbox-inbox {}: could not list the missing privileges: {}", config.name(), e.toString());
        }
        String message = missing.isEmpty()
                ? "inbox worker '" + config.name() + "' stopped: " + cause.getMessage() + " (SQLState "
                        + PgErrors.INSUFFICIENT_PRIVILEGE + ")"
                : Privileges.message("inbox worker '" + config.name() + "' stopped", config.schema(),
                        OutboxGrants.Component.INBOX_WORKER, missing);
        stopAll(message, cause);
    }

    private void stopAll(String message, Throwable cause) {
        log.error("txoutbox-inbox {}: {}", config.name(), message);
        listener.loopFailed(new OutboxException(message, cause, false));
        for (WorkerLane lane : lanes) {
            lane.stop();
        }
    }

    @Override
    public void nudge() {
        for (WorkerLane lane : lanes) {
            lane.nudge();
        }
    }

    @Override
    public InboxStats stats() {
        return new InboxStats(counters.processed.sum(), counters.failedAttempts.sum(), counters.parked.sum(),
                counters.dead.sum(), counters.batches.sum(), counters.loopErrors.sum(), counters.lanesOwned.get());
    }

    @Override
    public InboxWorkerConfig config() {
        return config;
    }

    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        log.info("txoutbox-inbox {}: closing", config.name());
        boolean interrupted = false;
        for (WorkerLane lane : lanes) {
            lane.stop();
        }
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(CLOSE_WAIT_MS);
        for (Thread t : threads) {
            long left = deadline - System.nanoTime();
            try {
                t.join(Math.max(1, TimeUnit.NANOSECONDS.toMillis(left)));
            } catch (InterruptedException e) {
                interrupted = true;
            }
            if (t.isAlive()) {
                log.warn("txoutbox-inbox {}: {} did not stop in time; interrupting it", config.name(), t.getName());
                t.interrupt();
            }
        }
        watchdog.close();
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
        log.info("txoutbox-inbox {}: closed; {}", config.name(), stats());
    }
}
