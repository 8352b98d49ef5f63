package io.txoutbox.internal.relay;

import io.txoutbox.OutboxException;
import io.txoutbox.OutboxReplay.Outcome;
import io.txoutbox.OutboxReplay.Result;
import io.txoutbox.OutboxReplay.Skipped;
import io.txoutbox.internal.pg.IdSequence;
import io.txoutbox.internal.pg.ReplayStatements;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;

/**
 * The checkpoint of one named replay, a row of {@code <outbox_table>_replay}: where the walk is, where it ends, what
 * it counted and whether it finished. A replay resumes from it, and refuses to resume with another filter.
 */
final class ReplayCheckpoints {

    /** One replay's progress, as stored and as the walk advances it. */
    static final class Checkpoint {
        private final String name;
        long lastId;
        long upTo;
        long replayed;
        long skipped;
        boolean finished;

        private Checkpoint(String name) {
            this.name = name;
        }

        Result result(Outcome outcome, List<Skipped> skippedEvents, Skipped waitingFor, Duration elapsed) {
            return new Result(name, replayed, skipped, skippedEvents, lastId, upTo, outcome == Outcome.DONE,
                    outcome, waitingFor, elapsed);
        }
    }

    private final ReplayStatements sql;
    private final String table;
    private final String name;
    private final String filter;

    /** {@code table}: the outbox table, whose id sequence bounds a new replay's range. */
    ReplayCheckpoints(ReplayStatements sql, String table, String name, String filter) {
        this.sql = sql;
        this.table = table;
        this.name = name;
        this.filter = filter;
    }

    /**
     * The stored checkpoint, or a new one from {@code firstLastId} up to the lower of {@code idTo} and the last id
     * handed out so far (events written after the start are not replayed).
     */
    Checkpoint open(Connection c, long firstLastId, long idTo) throws SQLException {
        Checkpoint cp = read(c);
        if (cp == null) {
            long upTo = Math.min(idTo, lastIdSoFar(c));
            try (PreparedStatement ps = c.prepareStatement(sql.insertCheckpoint())) {
                ps.setString(1, name);
                ps.setString(2, filter);
                ps.setLong(3, firstLastId);
                ps.setLong(4, upTo);
                ps.executeUpdate();
            }
            cp = read(c);
        }
        return cp;
    }

    /** The stored checkpoint; {@code null} when there is none. */
    Checkpoint read(Connection c) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(sql.readCheckpoint())) {
            ps.setString(1, name);
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next()) {
                    return null;
                }
                if (!rs.getString(1).equals(filter)) {
                    throw new OutboxException("replay '" + name + "' was started with another filter ("
                            + rs.getString(1) + "); use a new name, or reset() this one to start over", null, false);
                }
                Checkpoint cp = new Checkpoint(name);
                cp.lastId = rs.getLong(2);
                cp.upTo = rs.getLong(3);
                cp.replayed = rs.getLong(4);
                cp.skipped = rs.getLong(5);
                cp.finished = rs.getBoolean(6);
                return cp;
            }
        }
    }

    void save(Connection c, Checkpoint cp, boolean done) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(sql.saveCheckpoint())) {
            ps.setLong(1, cp.lastId);
            ps.setLong(2, cp.replayed);
            ps.setLong(3, cp.skipped);
            ps.setBoolean(4, done);
            ps.setString(5, name);
            ps.executeUpdate();
        }
    }

    void delete(Connection c) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(sql.deleteCheckpoint())) {
            ps.setString(1, name);
            ps.executeUpdate();
        }
    }

    /** The last id handed out so far; 0 before the first. */
    private long lastIdSoFar(Connection c) throws SQLException {
        // the identity sequence, not max(id): the table has no b-tree on id, and a scan of it all is what a
        // replay of a big table must never do
        IdSequence.Bounds s = IdSequence.bounds(c, table);
        return s == null || s.last() == null ? 0 : s.last();
    }
}
