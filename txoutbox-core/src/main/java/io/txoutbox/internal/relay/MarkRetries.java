package io.txoutbox.internal.relay;

import java.sql.SQLException;
import java.util.concurrent.atomic.LongAdder;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The backoff of a lane whose mark failed for a reason other than a lost session — a statement or lock timeout, a
 * trigger's error, a serialization failure, a full disk. The lane keeps its lease and the batch's known results and
 * tries the mark again (100 ms, doubling, at most 5 s), and claims new work only once the mark went through: sending
 * the batch again would deliver it again on every cycle for as long as the mark fails. One warning per streak, one
 * line when it ends; every retry is counted.
 */
final class MarkRetries {

    private static final Logger log = LoggerFactory.getLogger(MarkRetries.class);
    static final long FIRST_BACKOFF_MS = 100;
    static final long MAX_BACKOFF_MS = 5_000;

    private final String laneId;
    private final LongAdder retries;
    private long backoffMs;
    private int streak;
    private long streakStartMillis;

    MarkRetries(String laneId, LongAdder retries) {
        this.laneId = laneId;
        this.retries = retries;
    }

    /** The mark failed (rolled back already); returns how long to wait before the next try. */
    long failed(SQLException e, int delivered) {
        retries.increment();
        if (streak++ == 0) {
            streakStartMillis = System.currentTimeMillis();
            log.warn("txoutbox-relay {}: the mark of {} delivered events failed ({}, SQLState {}); the lane keeps "
                    + "its lease and tries the mark again, backing off up to {} ms, and claims nothing new until it "
                    + "goes through", laneId, delivered, e.getMessage(), e.getSQLState(), MAX_BACKOFF_MS);
        }
        backoffMs = Math.min(MAX_BACKOFF_MS, Math.max(FIRST_BACKOFF_MS, backoffMs * 2));
        return backoffMs;
    }

    /** The mark went through. */
    void succeeded() {
        if (streak > 0) {
            log.info("txoutbox-relay {}: the mark went through after {} failed tries in {} ms", laneId, streak,
                    System.currentTimeMillis() - streakStartMillis);
        }
        ended();
    }

    /** The streak ends without a mark (session lost, lane stopping). */
    void ended() {
        streak = 0;
        backoffMs = 0;
    }

    int streak() {
        return streak;
    }
}
