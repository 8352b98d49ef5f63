package io.txoutbox.internal.relay;

import io.txoutbox.OutboxException;
import io.txoutbox.OutboxGrants;
import io.txoutbox.PollingRelay;
import io.txoutbox.RelayConfig;
import io.txoutbox.internal.partition.PartitionedOutbox;
import io.txoutbox.internal.BackendCheck;
import io.txoutbox.internal.Misconfigured;
import io.txoutbox.internal.lane.ThreadPlace;
import io.txoutbox.internal.lane.LaneShards;
import io.txoutbox.internal.Privileges;
import io.txoutbox.internal.pg.ReadCommitted;
import io.txoutbox.internal.pg.RelayStatements;
import io.txoutbox.internal.progress.ProgressModel;
import io.txoutbox.internal.progress.ProgressModels;
import io.txoutbox.spi.RelayListener;
import io.txoutbox.spi.Transport;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Instant;
import java.util.ArrayList;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The polling relay: its lanes, their threads, the membership that sizes its fair share of lanes, the optional
 * NOTIFY listener, and an orderly close (lanes finish their batch and release their locks at once).
 */
public final class DefaultPollingRelay implements PollingRelay, Lane.Governor {

    private static final java.util.concurrent.atomic.AtomicInteger INSTANCES =
            new java.util.concurrent.atomic.AtomicInteger();

    private static final Logger log = LoggerFactory.getLogger(DefaultPollingRelay.class);

    private final RelayConfig config;
    private final DataSource dataSource;
    private final Transport transport;
    private final RelayCounters counters = new RelayCounters();
    private final List<Lane> lanes = new ArrayList<>();
    private final List<Thread> threads = new ArrayList<>();
    private final AtomicBoolean started = new AtomicBoolean();
    private final AtomicBoolean closed = new AtomicBoolean();
    private final AtomicReference<OutboxException> failure = new AtomicReference<>();
    private final String instanceId;
    private final RelayStatements statements;
    private final Membership membership;
    private final GuardedListener relayListener;
    private NotifyListener listener;

    public DefaultPollingRelay(RelayConfig config, DataSource dataSource, Transport transport) {
        this(config, dataSource, transport, RelayListener.none());
    }

    public DefaultPollingRelay(RelayConfig config, DataSource dataSource, Transport transport,
            RelayListener relayListener) {
        this.config = config;
        this.relayListener = new GuardedListener(relayListener, config.name());
        this.dataSource = dataSource;
        this.transport = transport;
        this.instanceId = config.name() + "@" + hostName() + ":" + ProcessHandle.current().pid() + "#"
                + INSTANCES.incrementAndGet();
        this.statements = new RelayStatements(config.schema());
        this.membership = new Membership(config, dataSource, statements, instanceId);
        ProgressModel progress = ProgressModels.of(config.schema());
        for (int i = 0; i < config.lanes(); i++) {
            lanes.add(new Lane(config, i, dataSource, transport, statements, progress, counters, this.relayListener,
                    this));
        }
    }

    private static String hostName() {
        try {
            return java.net.InetAddress.getLocalHost().getHostName().replaceAll("[^A-Za-z0-9._-]", "_");
        } catch (java.io.IOException e) {
            return "unknown-host";
        }
    }

    @Override
    public String instanceId() {
        return instanceId;
    }

    @Override
    public boolean tryReserve() {
        while (true) {
            int owned = counters.lanesReserved.get();
            if (owned >= membership.fairShare()) {
                return false;
            }
            if (counters.lanesReserved.compareAndSet(owned, owned + 1)) {
                return true;
            }
        }
    }

    @Override
    public void unreserve() {
        counters.lanesReserved.decrementAndGet();
    }

    @Override
    public boolean mustRelease(int laneIndex) {
        int surplus = counters.lanesReserved.get() - membership.fairShare();
        if (surplus <= 0) {
            return false;
        }
        // hand over the highest-numbered lanes this instance owns
        int higherOwned = 0;
        for (Lane lane : lanes) {
            if (lane.index() > laneIndex && lane.isOwner()) {
                higherOwned++;
            }
        }
        return higherOwned < surplus;
    }

    /** How long {@link #start()} waits for the lanes to be ready to send. */
    static final Duration START_READY_TIMEOUT = Duration.ofSeconds(5);

    @Override
    public PollingRelay start() {
        if (closed.get()) {
            throw new OutboxException("relay " + config.name() + " is closed; build a new one");
        }
        if (started.get()) {
            return this;
        }
        Privileges.requireAtStart(dataSource, config.schema(), "relay '" + config.name() + "'", log,
                List.of(OutboxGrants.Component.RELAY));
        if (!started.compareAndSet(false, true)) {
            return this;
        }
        log.info("txoutbox-relay {}: starting {} with {} (schema {})", config.name(), instanceId,
                RelayConfig.DESCRIPTOR.describe(config), config.schema());
        requireInstallation();
        finishPartitionConversion();
        relayListener.relayStarted(config);
        membership.start();
        for (Lane lane : lanes) {
            Thread t = new Thread(lane, "txoutbox-relay-" + lane.id());
            t.setDaemon(true);
            threads.add(t);
            t.start();
        }
        if (config.listenNotify()) {
            listener = new NotifyListener(config, dataSource, statements, this::nudge);
            listener.start();
        }
        awaitLanesReady();
        return this;
    }

    /**
     * Returns once every lane took its lane (with its transport ready to send: Kafka's producer made and its
     * transactions initialised) or stands by, at most {@link #START_READY_TIMEOUT}: so the first events written
     * after {@code start()} do not wait for the producers. Lanes not ready by then go on in the background.
     */
    private void awaitLanesReady() {
        long deadline = System.nanoTime() + START_READY_TIMEOUT.toNanos();
        try {
            for (int i = 0; i < lanes.size(); i++) {
                Lane lane = lanes.get(i);
                if (!lane.awaitReady(Math.max(0, deadline - System.nanoTime()))) {
                    // where its thread is names what it waits for: the pool, the database, the transport
                    log.info("txoutbox-relay {}: started; lane {} is not ready to send within {} and goes on getting "
                            + "ready in the background (its thread is {})", config.name(), lane.id(),
                            START_READY_TIMEOUT, ThreadPlace.of(threads.get(i), 8));
                    return;
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /**
     * The installation id names the lanes' fencing ids (the transport's {@code transactional.id}): a schema older than
     * version 8 has none, and the relay refuses to start until migrate made it. A database that cannot be reached yet
     * is left to the lanes, which read it each time they take a lane.
     */
    private void requireInstallation() {
        try (Connection c = ReadCommitted.open(dataSource)) {
            Installation.Id id = Installation.read(c, statements);
            log.info("txoutbox-relay {}: outbox {} has installation id {}", config.name(), id.outbox(), id.id());
        } catch (SQLException e) {
            log.warn("txoutbox-relay {}: could not read the installation id of {} yet ({}); the lanes read it when "
                    + "they take their lane", config.name(), config.schema(), e.getMessage());
        } catch (OutboxException e) {
            started.set(false);
            throw e;
        }
    }

    /**
     * A conversion to the partitioned table that a failed or killed migrate left between its steps is finished here:
     * the table works meanwhile, so a relay that may not change it (no privilege) warns once and starts anyway.
     */
    private void finishPartitionConversion() {
        if (!config.schema().isPartitioned()) {
            return;
        }
        try (Connection c = ReadCommitted.open(dataSource)) {
            if (new PartitionedOutbox(config.schema()).finishConversion(c, Instant.now())) {
                log.info("txoutbox-relay {}: finished the conversion of {} into a partitioned table", config.name(),
                        config.schema());
            }
        } catch (SQLException | RuntimeException e) {
            log.warn("txoutbox-relay {}: could not finish the unfinished conversion of {} into a partitioned table"
                    + " ({}); the table works meanwhile, run OutboxSchema.migrate as the table's owner to finish it",
                    config.name(), config.schema(), e.getMessage());
        }
    }

    /**
     * A lane met "permission denied" (42501): every lane would meet it again each cycle, so the relay stops them all,
     * once, and says which grants are missing.
     */
    @Override
    public void denied(Throwable cause) {
        if (BackendCheck.isMismatch(cause)) {
            stopAll(new OutboxException("relay '" + config.name() + "' stopped: " + BackendCheck.message(cause),
                    cause, false));
            return;
        }
        Misconfigured misconfigured = Misconfigured.in(cause);
        if (misconfigured != null) {
            stopAll(new OutboxException("relay '" + config.name() + "' stopped: " + misconfigured.getMessage(),
                    misconfigured, false));
            return;
        }
        List<String> missing = List.of();
        try (Connection c = ReadCommitted.open(dataSource)) {
            missing = Privileges.missing(c, config.schema(), OutboxGrants.Component.RELAY);
        } catch (SQLException | RuntimeException e) {
            log.debug("txoutbox-relay {}: could not list the missing privileges: {}", config.name(), e.toString());
        }
        String message = missing.isEmpty()
                ? "relay '" + config.name() + "' stopped: " + cause.getMessage() + " (SQLState 42501); grant the role "
                        + "what OutboxGrants.sql(schema, RELAY, role) lists, then start a new relay"
                : Privileges.message("relay '" + config.name() + "' stopped", config.schema(),
                        OutboxGrants.Component.RELAY, missing) + "; then start a new relay";
        stopAll(new OutboxException(message, cause, false));
    }

    /** Stops every lane, once, for {@code e} (shown by {@link #failure()} and health). */
    private void stopAll(OutboxException e) {
        if (!failure.compareAndSet(null, e)) {
            return;
        }
        log.error("txoutbox-relay {}: {}", config.name(), e.getMessage());
        relayListener.loopFailed(e);
        for (Lane lane : lanes) {
            lane.stop();
        }
        // and leave the membership, so that other instances take this one's share of the lanes
        membership.close();
    }

    /** A lane stopped because another outbox uses its fencing id; the lane logged why, once. */
    @Override
    public void fencingConflict(OutboxException conflict) {
        failure.compareAndSet(null, new OutboxException("relay '" + config.name() + "' (" + instanceId + "): "
                + conflict.getMessage(), conflict, false));
        relayListener.loopFailed(conflict);
    }

    @Override
    public Optional<OutboxException> failure() {
        return Optional.ofNullable(failure.get());
    }

    @Override
    public void nudge(int shard) {
        if (shard < 0 || shard >= config.schema().shards()) {
            nudge();
            return;
        }
        lanes.get(LaneShards.laneOf(shard, lanes.size())).nudge();
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
                counters.dead.sum(), counters.batches.sum(), counters.loopErrors.sum(), ownedLanes(),
                counters.fencedMarks.sum(), counters.markRetries.sum());
    }

    /** Lanes whose lock this instance holds now; reservations still trying a lock do not count. */
    private int ownedLanes() {
        int n = 0;
        for (Lane lane : lanes) {
            if (lane.isOwner()) {
                n++;
            }
        }
        return n;
    }

    @Override
    public List<LaneStatus> lanes() {
        List<LaneStatus> out = new ArrayList<>();
        for (Lane lane : lanes) {
            long since = lane.ownedSinceMillis();
            if (lane.isOwner() && since > 0) {
                long last = lane.lastBatchMillis();
                long loop = lane.lastLoopMillis();
                out.add(new LaneStatus(lane.index(), java.time.Instant.ofEpochMilli(since),
                        last == 0 ? null : java.time.Instant.ofEpochMilli(last), lane.lastBatchSize(),
                        java.time.Instant.ofEpochMilli(loop == 0 ? since : loop)));
            }
        }
        return out;
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
            membership.close();
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
