package io.txoutbox.internal.relay;

import io.txoutbox.OutboxException;
import io.txoutbox.OutboxReplay;
import io.txoutbox.ReplayConfig;
import io.txoutbox.OutboxReplay.Outcome;
import io.txoutbox.OutboxReplay.SkipReason;
import io.txoutbox.OutboxReplay.Skipped;
import io.txoutbox.OutboxReplay.WhenUnpublished;
import io.txoutbox.internal.pg.ReadCommitted;
import io.txoutbox.internal.pg.AdvisoryLocks;
import io.txoutbox.internal.pg.RelayStatements;
import io.txoutbox.internal.progress.ClaimFloor;
import io.txoutbox.internal.progress.ProgressModels;
import io.txoutbox.internal.pg.ReplayStatements;
import io.txoutbox.internal.relay.ReplayCheckpoints.Checkpoint;
import io.txoutbox.internal.relay.ReplayPages.Row;
import io.txoutbox.spi.OutboxRecord;
import io.txoutbox.spi.SendResult;
import io.txoutbox.spi.Transport;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@link OutboxReplay}: walks the outbox by id windows (the BRIN index on {@code id} finds each window's pages, so
 * no page of the range is ever read twice and nothing is sorted but one window), sends each page as one batch through
 * the transport on the lane {@code replay-<name>}, and checkpoints the last id after the page was acknowledged.
 *
 * <p>Every row of a window is read whatever its state, so none is passed unseen: published rows are sent, dead and
 * discarded ones reported, and at a pending or parked one the replay waits or reports, as configured. Rows that are
 * not visible yet (a writer's transaction drew the id but has not committed) are ruled out before the walk by the
 * claim floor's settlement rule ({@link ClaimFloor#awaitSettled}): once the writers that may still commit ids up to
 * the range's end have ended, every row of the range is visible to the walk's later statements.
 */
public final class DefaultOutboxReplay implements OutboxReplay {

    private static final Logger log = LoggerFactory.getLogger(DefaultOutboxReplay.class);
    /** Widest id window tried when windows come back empty (sparse ids after retention, or a narrow filter). */
    private static final long MAX_WINDOW = 1L << 22;

    private final DataSource dataSource;
    private final Transport transport;
    private final ReplayConfig config;
    private final String filter;
    private final ReplayCheckpoints checkpoints;
    private final ReplayPages pages;
    private final AdvisoryLocks.Key lock;
    private final ClaimFloor settlement;
    private volatile boolean stopping;

    public DefaultOutboxReplay(DataSource dataSource, Transport transport, ReplayConfig config) {
        this.dataSource = dataSource;
        this.transport = transport;
        this.config = config;
        String table = config.schema().qualifiedOutboxTable();
        this.filter = describeFilter(config);
        this.settlement = new ClaimFloor(table);
        // the page's columns are the relay's record columns, read by OutboxRows.record
        ReplayStatements sql = new ReplayStatements(config.schema(), RelayStatements.RECORD_COLUMNS,
                ProgressModels.of(config.schema()).published(null));
        this.checkpoints = new ReplayCheckpoints(sql, table, config.name(), filter);
        this.pages = new ReplayPages(sql, config);
        this.lock = AdvisoryLocks.replay(sql.checkpointTable(), config.name());
    }

    private static String describeFilter(ReplayConfig b) {
        return "topic=" + b.topic() + " aggregateType=" + b.aggregateType() + " aggregateId=" + b.aggregateId()
                + " eventType=" + b.eventType() + " created=[" + b.createdFrom() + "," + b.createdTo() + ") ids=["
                + b.idFrom() + "," + b.idTo() + "] toTopic=" + b.toTopic();
    }

    @Override
    public ReplayConfig config() {
        return config;
    }

    @Override
    public Result run() {
        long started = System.nanoTime();
        try (Connection c = ReadCommitted.open(dataSource)) {
            c.setAutoCommit(true);
            if (!lock.tryLock(c)) {
                throw new OutboxException("replay '" + config.name() + "' is already running elsewhere (its advisory lock "
                        + "is held); wait for it, or stop it first", null, false);
            }
            try {
                Checkpoint cp = checkpoints.open(c, Math.max(0, config.idFrom() - 1), config.idTo());
                if (cp.finished) {
                    log.info("txoutbox-replay {}: already done ({} replayed); reset() to run it again", config.name(),
                            cp.replayed);
                    return cp.result(Outcome.DONE, List.of(), null, Duration.ZERO);
                }
                log.info("txoutbox-replay {}: {} from id {} up to {} ({})", config.name(),
                        cp.lastId == Math.max(0, config.idFrom() - 1) ? "starting" : "resuming", cp.lastId, cp.upTo,
                        ReplayConfig.DESCRIPTOR.describe(config));
                return loop(c, cp, started);
            } finally {
                unlock(c);
            }
        } catch (SQLException e) {
            throw new OutboxException("replay '" + config.name() + "' failed: " + e.getMessage() + " (SQLState "
                    + e.getSQLState() + "); run it again to resume from its checkpoint", e, true);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new OutboxException("replay '" + config.name() + "' interrupted; run it again to resume", e, true);
        } finally {
            transport.close();
        }
    }

    /** What this run skipped: the count, and the first {@value OutboxReplay#MAX_REPORTED} one by one. */
    private final class Skips {
        final List<Skipped> listed = new ArrayList<>();
        long count;

        void add(Row row, SkipReason reason, String detail) {
            add(row.record(), row.topic(), row.state(), reason, detail);
        }

        void add(OutboxRecord r, String topic, String state, SkipReason reason, String detail) {
            count++;
            if (listed.size() < MAX_REPORTED) {
                listed.add(new Skipped(r.eventId(), r.id(), topic, state, reason));
                log.warn("txoutbox-replay {}: event {} (outbox id {}, {}) not replayed: {}{}", config.name(), r.eventId(),
                        r.id(), state, reason, detail == null ? "" : ": " + detail);
            } else if (listed.size() == MAX_REPORTED && count == MAX_REPORTED + 1) {
                log.warn("txoutbox-replay {}: more than {} events skipped; the others are counted, not listed",
                        config.name(), MAX_REPORTED);
            }
        }
    }

    private enum Wait { FINAL, STOPPED, TIMED_OUT }

    private Result loop(Connection c, Checkpoint cp, long started) throws SQLException, InterruptedException {
        Skips skips = new Skips();
        long lo = cp.lastId;
        long window = config.batchSize();
        long sentThisRun = 0;
        long paceStart = System.nanoTime();
        Outcome outcome = settle(c, cp);
        Skipped waitingFor = null;
        while (outcome == null) {
            if (stopping || Thread.currentThread().isInterrupted()) {
                outcome = Outcome.STOPPED;
                break;
            }
            if (lo >= cp.upTo) {
                outcome = Outcome.DONE;
                break;
            }
            long hi = Math.min(cp.upTo, lo + window);
            List<Row> rows = pages.page(c, lo, hi);
            if (rows.isEmpty()) {
                lo = hi;
                window = Math.min(MAX_WINDOW, window * 2);
                continue;
            }
            window = config.batchSize();
            long skippedBefore = skips.count;
            List<OutboxRecord> toSend = new ArrayList<>(rows.size());
            Row blocking = null;
            for (Row row : rows) {
                switch (row.published() ? "PUBLISHED" : row.state()) { // published: as the progress model says
                    case "PUBLISHED" -> toSend.add(row.record());
                    case "DEAD" -> skips.add(row, SkipReason.DEAD, null);
                    case "DISCARDED" -> skips.add(row, SkipReason.DISCARDED, null);
                    default -> { // PENDING or PARKED: not final yet
                        if (config.whenUnpublished() == WhenUnpublished.REPORT) {
                            skips.add(row, SkipReason.NOT_PUBLISHED, null);
                        } else {
                            blocking = row;
                        }
                    }
                }
                if (blocking != null) {
                    break; // what comes after it waits, so that the target topic gets the range in id order
                }
            }
            long refused = toSend.isEmpty() ? 0 : send(toSend, ReplayPages.originalTopics(rows), skips);
            cp.replayed += toSend.size() - refused;
            cp.skipped += skips.count - skippedBefore;
            lo = blocking != null ? blocking.record().id() - 1
                    : rows.size() == config.batchSize() ? rows.get(rows.size() - 1).record().id() : hi;
            cp.lastId = lo;
            checkpoints.save(c, cp, false);
            sentThisRun += toSend.size();
            pace(paceStart, sentThisRun);
            if (blocking != null) {
                Wait w = awaitFinal(c, blocking);
                if (w == Wait.TIMED_OUT) {
                    outcome = Outcome.WAIT_TIMED_OUT;
                    waitingFor = new Skipped(blocking.record().eventId(), blocking.record().id(), blocking.topic(),
                            pages.currentState(c, blocking), SkipReason.NOT_PUBLISHED);
                } else if (w == Wait.STOPPED) {
                    outcome = Outcome.STOPPED;
                }
                // FINAL: the next page starts at the row and finds it published (sent) or dead (reported)
            }
        }
        boolean done = outcome == Outcome.DONE;
        cp.lastId = lo;
        checkpoints.save(c, cp, done);
        Duration elapsed = Duration.ofNanos(System.nanoTime() - started);
        log.info("txoutbox-replay {}: {} ({} replayed, {} skipped in all; {} sent, {} skipped this run in {} ms)",
                config.name(), switch (outcome) {
                    case DONE -> "done";
                    case STOPPED -> "stopped";
                    case WAIT_TIMED_OUT -> "stopped waiting after replay.waitTimeout " + config.waitTimeout()
                            + "; run it again to resume at outbox id " + (lo + 1);
                }, cp.replayed, cp.skipped, sentThisRun, skips.count, elapsed.toMillis());
        // refusals are found after the page's other skips: listed in id order all the same
        skips.listed.sort(java.util.Comparator.comparingLong(Skipped::id));
        return cp.result(outcome, skips.listed, waitingFor, elapsed);
    }

    /**
     * Waits until every id up to the range's end is settled, so that the walk sees every row of the range: the claim
     * floor's rule (read the sequence, then wait for the writer transactions that may still commit ids up to it).
     * Returns null to go on, or the outcome that ends the run.
     */
    private Outcome settle(Connection c, Checkpoint cp) throws SQLException, InterruptedException {
        if (cp.lastId >= cp.upTo) {
            return null;
        }
        long startNanos = System.nanoTime();
        ClaimFloor.Settlement s = settlement.awaitSettled(c, startNanos + config.waitTimeout().toNanos(),
                () -> stopping || Thread.currentThread().isInterrupted());
        if (!s.provable()) {
            log.warn("txoutbox-replay {}: the outbox's id sequence hands ids out of order (or there is none), so "
                    + "late commits below id {} cannot be ruled out; such events may be missed", config.name(), cp.upTo);
            return null;
        }
        if (s.settledUpTo() >= 0) {
            long waited = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - startNanos);
            if (waited >= ClaimFloor.CHECK_MILLIS) {
                log.info("txoutbox-replay {}: waited {} ms for writer transactions that could still commit events "
                        + "of the range", config.name(), waited);
            }
            return null;
        }
        if (stopping || Thread.currentThread().isInterrupted()) {
            return Outcome.STOPPED;
        }
        log.warn("txoutbox-replay {}: {} writer transaction(s) that may still commit events with ids up to {} did "
                + "not end within replay.waitTimeout {}; nothing was replayed by this run, run it again (or find the "
                + "long transaction in pg_stat_activity)", config.name(), s.stillOpen(), cp.upTo, config.waitTimeout());
        return Outcome.WAIT_TIMED_OUT;
    }

    /** Waits, bounded by the wait timeout, until the row is no longer pending or parked (or gone). */
    private Wait awaitFinal(Connection c, Row row) throws SQLException, InterruptedException {
        OutboxRecord r = row.record();
        long startNanos = System.nanoTime();
        long deadline = startNanos + config.waitTimeout().toNanos();
        log.info("txoutbox-replay {}: waiting for event {} (outbox id {}, {}) before going on, up to {}{}", config.name(),
                r.eventId(), r.id(), row.state(), config.waitTimeout(), row.state().equals("PARKED")
                        ? ": its key is parked; requeue (OutboxAdmin.requeue) or discard it to let the replay on" : "");
        long pollMs = 20;
        while (true) {
            String state = pages.currentState(c, row);
            if (state == null || !(state.equals("PENDING") || state.equals("PARKED"))) {
                log.info("txoutbox-replay {}: event {} is {} after {} ms; going on", config.name(), r.eventId(),
                        state == null ? "gone" : state, TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - startNanos));
                return Wait.FINAL;
            }
            if (stopping || Thread.currentThread().isInterrupted()) {
                return Wait.STOPPED;
            }
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                log.warn("txoutbox-replay {}: event {} (outbox id {}) is still {} after replay.waitTimeout {}; "
                        + "stopping here, run the replay again to resume at it", config.name(), r.eventId(), r.id(), state,
                        config.waitTimeout());
                return Wait.TIMED_OUT;
            }
            // a poll of one row's state, not a wait for work inside the replay: the relay publishes it elsewhere
            TimeUnit.MILLISECONDS.sleep(Math.min(pollMs, TimeUnit.NANOSECONDS.toMillis(left) + 1));
            pollMs = Math.min(1_000, pollMs * 2);
        }
    }

    /**
     * Sends the page until every record is delivered or refused for good; what is not delivered goes again, in
     * order, after a growing pause (the transport's contract keeps a failed record's later records of its key back).
     * Records refused for good are added to {@code skips}; returns how many.
     */
    private long send(List<OutboxRecord> page, Map<Long, String> topics, Skips skips) throws InterruptedException {
        List<OutboxRecord> left = page;
        long skipped = 0;
        long backoffMs = 50;
        while (!left.isEmpty()) {
            List<SendResult> results;
            try {
                results = transport.send("replay-" + config.name(), left).toCompletableFuture()
                        .get(config.sendTimeout().toMillis(), TimeUnit.MILLISECONDS);
            } catch (java.util.concurrent.ExecutionException | TimeoutException e) {
                results = null;
                log.warn("txoutbox-replay {}: page of {} not acknowledged ({}); sending it again", config.name(),
                        left.size(), e.toString());
            }
            if (results != null && results.size() != left.size()) {
                log.warn("txoutbox-replay {}: transport returned {} results for a page of {}; sending it again",
                        config.name(), results.size(), left.size());
            }
            List<OutboxRecord> again = new ArrayList<>();
            for (int i = 0; i < left.size(); i++) {
                SendResult r = results == null || results.size() != left.size() ? null : results.get(i);
                if (r != null && r.isDelivered()) {
                    continue;
                }
                if (r instanceof SendResult.Failed f && f.kind() == SendResult.Kind.PERMANENT) {
                    skipped++;
                    skips.add(left.get(i), topics.get(left.get(i).id()), "PUBLISHED", SkipReason.REFUSED,
                            "refused for good by the transport: " + f.cause().toString());
                    continue;
                }
                again.add(left.get(i));
            }
            left = again;
            if (!left.isEmpty()) {
                if (stopping) {
                    throw new InterruptedException("stopped with a page not yet acknowledged");
                }
                Thread.sleep(backoffMs); // a backoff between tries, not a wait for a condition
                backoffMs = Math.min(config.retryBackoffMax().toMillis(), backoffMs * 2);
            }
        }
        return skipped;
    }

    private void pace(long startNanos, long sent) throws InterruptedException {
        if (config.maxRate() <= 0) {
            return;
        }
        long due = startNanos + (long) (sent / config.maxRate() * 1e9);
        long wait = due - System.nanoTime();
        if (wait > 0) {
            TimeUnit.NANOSECONDS.sleep(wait); // the rate limit
        }
    }

    @Override
    public void stop() {
        stopping = true;
    }

    @Override
    public Result progress() {
        try (Connection c = ReadCommitted.open(dataSource)) {
            Checkpoint cp = checkpoints.read(c);
            // the stored progress has counts, not the listed skips; an unfinished replay has no outcome yet
            return cp == null ? null : cp.result(cp.finished ? Outcome.DONE : null, List.of(), null, Duration.ZERO);
        } catch (SQLException e) {
            throw new OutboxException("reading the progress of replay '" + config.name() + "' failed: " + e.getMessage(),
                    e, true);
        }
    }

    @Override
    public void reset() {
        try (Connection c = ReadCommitted.open(dataSource)) {
            checkpoints.delete(c);
        } catch (SQLException e) {
            throw new OutboxException("resetting replay '" + config.name() + "' failed: " + e.getMessage(), e, true);
        }
    }

    private void unlock(Connection c) {
        try {
            lock.unlock(c);
        } catch (SQLException e) {
            log.debug("txoutbox-replay: unlock failed (the session ends anyway): {}", e.toString());
        }
    }
}
