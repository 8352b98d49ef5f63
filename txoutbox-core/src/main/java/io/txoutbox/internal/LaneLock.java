package io.txoutbox.internal;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
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
     * {@code otherLaneCountsSql} (one lane count a row), the lane counts other sessions hold. The caller ends the
     * session (or unlocks all) when it does not keep the lane.
     */
    public static Result tryAcquire(Connection c, long laneKey, long laneCountKey, String otherLaneCountsSql,
            int lanes) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("SELECT pg_try_advisory_lock(?)")) {
            ps.setLong(1, laneKey);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                if (!rs.getBoolean(1)) {
                    return new Result(Outcome.TAKEN, List.of());
                }
            }
        }
        try (PreparedStatement ps = c.prepareStatement("SELECT pg_advisory_lock_shared(?)")) {
            ps.setLong(1, laneCountKey);
            ps.execute();
        }
        List<Integer> others = new ArrayList<>();
        try (Statement st = c.createStatement(); ResultSet rs = st.executeQuery(otherLaneCountsSql)) {
            while (rs.next()) {
                if (rs.getInt(1) != lanes) {
                    others.add(rs.getInt(1));
                }
            }
        }
        return others.isEmpty() ? new Result(Outcome.OWNED, List.of())
                : new Result(Outcome.LANE_COUNT_CONFLICT, List.copyOf(others));
    }
}
