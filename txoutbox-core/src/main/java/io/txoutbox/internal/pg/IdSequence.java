package io.txoutbox.internal.pg;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;

/**
 * The outbox table's id sequence (its identity column's): the last id handed out, read without touching the table
 * (no b-tree on {@code id}, and {@code max(id)} of a big table is a scan).
 */
public final class IdSequence {

    /** What the sequence says: its first value, the last id handed out ({@code null}: none yet), its cache. */
    public record Bounds(long min, Long last, long cache) {
    }

    private IdSequence() {
    }

    /** The sequence of {@code qualifiedTable}'s {@code id}, as a regclass text. */
    public static String sequenceOf(Connection c, String qualifiedTable) throws SQLException {
        return Jdbc.queryString(c, "SELECT pg_get_serial_sequence(?, 'id')", qualifiedTable);
    }

    /**
     * The last id handed out, read from the sequence relation itself ({@code is_called}: before the first
     * {@code nextval} {@code last_value} is the first id to come, not one handed out). Needs SELECT on the sequence.
     */
    public static long lastHandedOut(Connection c, String qualifiedSequence) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(
                "SELECT CASE WHEN is_called THEN last_value ELSE last_value - 1 END FROM " + qualifiedSequence);
                ResultSet rs = ps.executeQuery()) {
            rs.next();
            return rs.getLong(1);
        }
    }

    /** The sequence's bounds ({@code pg_sequence}); {@code null} when the table has no id sequence. */
    public static Bounds bounds(Connection c, String qualifiedTable) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("SELECT s.seqmin, pg_sequence_last_value(s.seqrelid),"
                + " s.seqcache FROM pg_sequence s WHERE s.seqrelid = pg_get_serial_sequence(?, 'id')::regclass")) {
            ps.setString(1, qualifiedTable);
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next()) {
                    return null;
                }
                long min = rs.getLong(1);
                long last = rs.getLong(2);
                boolean never = rs.wasNull();
                return new Bounds(min, never ? null : last, rs.getLong(3));
            }
        }
    }
}
