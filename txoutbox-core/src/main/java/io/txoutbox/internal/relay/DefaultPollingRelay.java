package io.txoutbox.internal.relay;

import io.txoutbox.OutboxException;
import io.txoutbox.PollingRelay;
import io.txoutbox.RelayConfig;
import io.txoutbox.spi.Transport;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** The polling relay: its lanes, their threads, the optional NOTIFY listener, and an orderly close. */
public final class DefaultPollingRelay implements PollingRelay {

    private static final Logger log = LoggerFactory.getLogger(DefaultPollingRelay.class);

    private final RelayConfig config;
    private final DataSource dataSource;
    private final Transport transport;
    private final RelayCounters counters = new RelayCounters();
    private final List<Lane> lanes = new ArrayList<>();
    private final List<Thread> threads = new ArrayList<>();
    private final AtomicBoolean started = new AtomicBoolean();
    private final AtomicBoolean closed = new AtomicBoolean();
    private NotifyListener listener;

    public DefaultPollingRelay(RelayConfig config, DataSource dataSource, Transport transport) {
        this.config = config;
        this.dataSource = dataSource;
        this.transport = transport;
        RelaySql sql = new RelaySql(config.schema());
        for (int i = 0; i < config.lanes(); i++) {
            lanes.add(new Lane(config, i, dataSource, transport, sql, counters));
        }
    }

    @Override
    public PollingRelay start() {
        if (closed.get()) {
            throw new OutboxException("relay " + config.name() + " is closed; build a new one");
        }
        if (!started.compareAndSet(false, true)) {
            return this;
        }
        log.info("txoutbox-relay {}: starting with {}", config.name(), config);
        for (Lane lane : lanes) {
            Thread t = new Thread(lane, "txoutbox-relay-" + lane.id());
            t.setDaemon(true);
            threads.add(t);
            t.start();
        }
        if (config.listenNotify()) {
            listener = new NotifyListener(config, dataSource, this::nudge);
            listener.start();
        }
        return this;
    }

    @Override
    public void nudge() {
        for (Lane lane : lanes) {
            lane.nudge();
        }
    }

    @Override
    public RelayStats stats() {
        return new RelayStats(counters.published.sum(), counters.failedAttempts.sum(), counters.parked.sum(),
                counters.dead.sum(), counters.batches.sum(), counters.loopErrors.sum(), counters.lanesOwned.get());
    }

    @Override
    public RelayConfig config() {
        return config;
    }

    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        log.info("txoutbox-relay {}: closing", config.name());
        boolean interrupted = false;
        try {
            if (listener != null) {
                listener.close();
            }
            for (Lane lane : lanes) {
                lane.stop();
            }
            long deadline = System.nanoTime() + config.sendTimeout().toNanos() + TimeUnit.SECONDS.toNanos(5);
            for (Thread t : threads) {
                long left = deadline - System.nanoTime();
                try {
                    t.join(Math.max(1, TimeUnit.NANOSECONDS.toMillis(left)));
                } catch (InterruptedException e) {
                    interrupted = true;
                }
                if (t.isAlive()) {
                    log.warn("txoutbox-relay {}: {} did not stop in time; interrupting it", config.name(),
                            t.getName());
                    t.interrupt();
                }
            }
        } finally {
            try {
                transport.close();
            } catch (RuntimeException e) {
                log.warn("txoutbox-relay {}: transport did not close cleanly: {}", config.name(), e.toString());
            }
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
            log.info("txoutbox-relay {}: closed; {}", config.name(), stats());
        }
    }
}
