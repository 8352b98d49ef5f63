package io.txoutbox.internal.pg;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.OptionalLong;

/**
 * The small JDBC steps every component repeats: bind and run one statement, read one value, roll back quietly.
 * Each takes the caller's {@link Connection}: the session is the caller's, never one borrowed here (the relay's
 * fencing is its session).
 */
public final class Jdbc {

    private Jdbc() {
    }

    /** Rolls back, ignoring a failure (the original failure is what is reported; a broken session is replaced). */
    public static void rollbackQuietly(Connection c) {
        try {
            c.rollback();
        } catch (SQLException ignored) {
            // the original failure is reported
        }
    }

    /** Closes, ignoring a failure. */
    public static void closeQuietly(AutoCloseable c) {
        if (c == null) {
            return;
        }
        try {
            c.close();
        } catch (Exception ignored) {
            // nothing left to do with it
        }
    }

    /** Runs an INSERT, UPDATE, DELETE or DDL statement with {@code binds}; the update count. */
    public static int update(Connection c, String sql, Object... binds) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(sql)) {
            bind(ps, binds);
            return ps.executeUpdate();
        }
    }

    /** The first column of the first row as a long; {@code empty} for no row or SQL NULL. */
    public static OptionalLong queryLong(Connection c, String sql, Object... binds) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(sql)) {
            bind(ps, binds);
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next()) {
                    return OptionalLong.empty();
                }
                long v = rs.getLong(1);
                return rs.wasNull() ? OptionalLong.empty() : OptionalLong.of(v);
            }
        }
    }

    /** The first column of the first row as a boolean; false for no row or SQL NULL. */
    public static boolean queryBoolean(Connection c, String sql, Object... binds) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(sql)) {
            bind(ps, binds);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() && rs.getBoolean(1);
            }
        }
    }

    /** The first column of the first row as a string; null for no row or SQL NULL. */
    public static String queryString(Connection c, String sql, Object... binds) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(sql)) {
            bind(ps, binds);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() ? rs.getString(1) : null;
            }
        }
    }

    /** Binds {@code binds} in order ({@code setObject}; a {@code null} binds SQL NULL of unknown type). */
    public static void bind(PreparedStatement ps, Object... binds) throws SQLException {
        for (int i = 0; i < binds.length; i++) {
            ps.setObject(i + 1, binds[i]);
        }
    }

    /** The first column of every row as an int (SQL NULL reads 0), in the order the rows come. */
    public static List<Integer> queryInts(Connection c, String sql, Object... binds) throws SQLException {
        List<Integer> out = new ArrayList<>();
        try (PreparedStatement ps = c.prepareStatement(sql)) {
            bind(ps, binds);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    out.add(rs.getInt(1));
                }
            }
        }
        return out;
    }
}
