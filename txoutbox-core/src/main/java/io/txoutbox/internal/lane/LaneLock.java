package io.txoutbox.internal.lane;

import io.txoutbox.internal.pg.AdvisoryLocks;
import io.txoutbox.internal.pg.Jdbc;
import io.txoutbox.internal.pg.LaneStatements;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;

/**
 * The ownership of one lane (of the relay or of an inbox worker): a session advisory lock on the lane, plus a shared
 * lock on the lane count, so that a process configured with another lane count — whose lanes would overlap these and
 * break per-key order — is noticed and refused.
 */
public final class LaneLock {

    public enum Outcome {
        /** This session holds the lane now. */
        OWNED,
        /** Another session holds the lane. */
        TAKEN,
        /** The lane was free, but others work with another lane count: this lane must wait. */
        LANE_COUNT_CONFLICT
    }

    /** {@code otherLaneCounts}: the lane counts others work with, when they differ from ours. */
    public record Result(Outcome outcome, List<Integer> otherLaneCounts) {
    }

    private LaneLock() {
    }

    /**
     * Tries the lane's lock on this session; once taken, also holds the shared lock of {@code lanes} and reads, with
     * {@code otherLaneCountsSql} (one lane count a row, no parameters), the lane counts other sessions hold. The
     * caller ends the session (or unlocks all) when it does not keep the lane.
     */
    public static Result tryAcquire(Connection c, long laneKey, long laneCountKey, String otherLaneCountsSql,
            int lanes) throws SQLException {
        return tryAcquire(c, oneBigint(laneKey), oneBigint(laneCountKey), lanes,
                () -> Jdbc.queryInts(c, otherLaneCountsSql));
    }

    /**
     * {@link #tryAcquire(Connection, long, long, String, int)} with the lane counts read by
     * {@link LaneStatements#OTHER_LANE_COUNTS} under {@code laneCount}'s high half and kind ({@code high << 32 | kind
     * << 16 | lanes}, one-bigint keys).
     */
    public static Result tryAcquire(Connection c, AdvisoryLocks.Key lane, AdvisoryLocks.Key laneCount, int lanes)
            throws SQLException {
        long key = laneCount.single();
        return tryAcquire(c, lane, laneCount, lanes,
                () -> Jdbc.queryInts(c, LaneStatements.OTHER_LANE_COUNTS, key >>> 32, (key >>> 16) & 0xFFFF));
    }

    private interface LaneCounts {
        List<Integer> read() throws SQLException;
    }

    private static Result tryAcquire(Connection c, AdvisoryLocks.Key lane, AdvisoryLocks.Key laneCount, int lanes,
            LaneCounts laneCounts) throws SQLException {
        if (!lane.tryLock(c)) {
            return new Result(Outcome.TAKEN, List.of());
        }
        laneCount.lockShared(c);
        List<Integer> others = new ArrayList<>();
        for (int count : laneCounts.read()) {
            if (count != lanes) {
                others.add(count);
            }
        }
        return others.isEmpty() ? new Result(Outcome.OWNED, List.of())
                : new Result(Outcome.LANE_COUNT_CONFLICT, List.copyOf(others));
    }

    /** A one-bigint advisory lock key, as the callers of the long form compute it. */
    private static AdvisoryLocks.Key oneBigint(long key) {
        return new AdvisoryLocks.Key(false, key, 0, 0);
    }
}
