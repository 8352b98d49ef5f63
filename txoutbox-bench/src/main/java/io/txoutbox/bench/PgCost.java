package io.txoutbox.bench;

import io.txoutbox.OutboxSchema;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.HashMap;
import java.util.Map;
import javax.sql.DataSource;

/**
 * What the database did in a window, writers and relay apart: statements and WAL bytes per role from
 * {@code pg_stat_statements} (the relay connects as {@link BenchEnv#RELAY_ROLE}, writers as the default user;
 * counted when each statement ends, so without lag; commit records are not part of any statement's
 * {@code wal_bytes}), all WAL from {@code pg_current_wal_lsn()}, and the row counters of the outbox table and of its
 * {@code <outbox>_progress} table (the cursor model's writes, schema version 11) from {@code pg_stat_user_tables}
 * (flushed by each backend at most once a second: read them a second after the work).
 */
final class PgCost {

    /** Per (role, query id): query text, calls, WAL bytes and execution time (µs, planning apart). */
    record Counted(String role, String query, long calls, long walBytes, long execMicros) {
    }

    /** A snapshot; {@code statements} is empty when {@code pg_stat_statements} is not loaded. */
    record Snapshot(Map<String, Counted> statements, String lsn, long inserted, long updated, long deleted,
                    long dead, long progressUpdated, long progressHotUpdated) {
    }

    /**
     * One window: relay statements (BEGIN apart), its BEGINs and WAL, writer INSERTs and WAL, all WAL, dead row
     * versions of the outbox table, updates of its progress table (each leaves a dead version too; HOT ones are
     * pruned without vacuum).
     */
    record Delta(boolean statementsKnown, long relayStatements, long relayBegins, long relayWalBytes,
                 long writerInserts, long writerWalBytes, long walBytes, long inserted, long deadMade, long deadDelta,
                 long progressUpdates, long progressHotUpdates,
                 Map<String, Long> relayCallsByQuery, Map<String, Long> relayExecMicrosByQuery) {

        Delta plus(Delta o) {
            Map<String, Long> q = new HashMap<>(relayCallsByQuery);
            o.relayCallsByQuery.forEach((k, v) -> q.merge(k, v, Long::sum));
            Map<String, Long> x = new HashMap<>(relayExecMicrosByQuery);
            o.relayExecMicrosByQuery.forEach((k, v) -> x.merge(k, v, Long::sum));
            return new Delta(statementsKnown && o.statementsKnown, relayStatements + o.relayStatements,
                    relayBegins + o.relayBegins, relayWalBytes + o.relayWalBytes, writerInserts + o.writerInserts,
                    writerWalBytes + o.writerWalBytes, walBytes + o.walBytes, inserted + o.inserted,
                    deadMade + o.deadMade, deadDelta + o.deadDelta, progressUpdates + o.progressUpdates,
                    progressHotUpdates + o.progressHotUpdates, q, x);
        }
    }

    private PgCost() {
    }

    /** @param relayRole whether relays connect as {@link BenchEnv#RELAY_ROLE} (else statements are not split) */
    static Snapshot snapshot(DataSource ds, OutboxSchema schema, boolean relayRole) {
        try (Connection c = ds.getConnection(); Statement st = c.createStatement()) {
            Map<String, Counted> statements = new HashMap<>();
            if (relayRole && statementsLoaded(st)) {
                try (ResultSet rs = st.executeQuery("SELECT r.rolname, s.queryid, s.query, s.calls,"
                        + " s.wal_bytes::bigint, ((s.total_exec_time + s.total_plan_time) * 1000)::bigint FROM pg_stat_statements s JOIN pg_roles r ON r.oid = s.userid"
                        + " WHERE s.dbid = (SELECT oid FROM pg_database WHERE datname = current_database())")) {
                    while (rs.next()) {
                        statements.merge(rs.getString(1) + "/" + rs.getLong(2),
                                new Counted(rs.getString(1), rs.getString(3), rs.getLong(4), rs.getLong(5),
                                        rs.getLong(6)),
                                (a, b) -> new Counted(a.role, a.query, a.calls + b.calls, a.walBytes + b.walBytes,
                                        a.execMicros + b.execMicros));
                    }
                }
            }
            st.execute("SELECT pg_stat_clear_snapshot()");
            String lsn;
            try (ResultSet rs = st.executeQuery("SELECT pg_current_wal_lsn()::text")) {
                rs.next();
                lsn = rs.getString(1);
            }
            // the progress table's counters read with the outbox's, from the same stats snapshot
            try (PreparedStatement ps = c.prepareStatement("SELECT"
                    + " coalesce(sum(n_tup_ins) FILTER (WHERE relname = ?), 0),"
                    + " coalesce(sum(n_tup_upd) FILTER (WHERE relname = ?), 0),"
                    + " coalesce(sum(n_tup_del) FILTER (WHERE relname = ?), 0),"
                    + " coalesce(sum(n_dead_tup) FILTER (WHERE relname = ?), 0),"
                    + " coalesce(sum(n_tup_upd) FILTER (WHERE relname = ?), 0),"
                    + " coalesce(sum(n_tup_hot_upd) FILTER (WHERE relname = ?), 0)"
                    + " FROM pg_stat_user_tables WHERE schemaname = ?")) {
                String[] t = schema.qualifiedOutboxTable().replace("\"", "").split("\\.");
                for (int i = 1; i <= 6; i++) {
                    ps.setString(i, i <= 4 ? t[1] : t[1] + "_progress");
                }
                ps.setString(7, t[0]);
                try (ResultSet rs = ps.executeQuery()) {
                    rs.next();
                    return new Snapshot(statements, lsn, rs.getLong(1), rs.getLong(2), rs.getLong(3), rs.getLong(4),
                            rs.getLong(5), rs.getLong(6));
                }
            }
        } catch (SQLException e) {
            throw new IllegalStateException("could not read the database's statistics: " + e.getMessage(), e);
        }
    }

    private static boolean statementsLoaded(Statement st) throws SQLException {
        try (ResultSet rs = st.executeQuery("SELECT count(*) FROM pg_extension WHERE extname = 'pg_stat_statements'"
                + " AND current_setting('shared_preload_libraries') LIKE '%pg_stat_statements%'")) {
            rs.next();
            return rs.getLong(1) > 0;
        }
    }

    static Delta delta(DataSource ds, Snapshot a, Snapshot b) {
        long relay = 0;
        long begins = 0;
        long relayWal = 0;
        long inserts = 0;
        long writerWal = 0;
        Map<String, Long> byQuery = new HashMap<>();
        Map<String, Long> execByQuery = new HashMap<>();
        for (var e : b.statements.entrySet()) {
            Counted s = e.getValue();
            Counted before = a.statements.get(e.getKey());
            long calls = s.calls - (before == null ? 0 : before.calls);
            long wal = s.walBytes - (before == null ? 0 : before.walBytes);
            long exec = s.execMicros - (before == null ? 0 : before.execMicros);
            if (calls == 0) {
                continue;
            }
            String q = s.query.strip();
            if (s.role.equals(BenchEnv.RELAY_ROLE)) {
                if (q.equalsIgnoreCase("BEGIN")) {
                    begins += calls;
                } else {
                    relay += calls;
                    String shortQuery = q.length() > 70 ? q.substring(0, 70).replaceAll("\\s+", " ") + "…" : q;
                    byQuery.merge(shortQuery, calls, Long::sum);
                    execByQuery.merge(shortQuery, exec, Long::sum);
                }
                relayWal += wal;
            } else {
                writerWal += wal;
                if (q.regionMatches(true, 0, "INSERT", 0, 6)) {
                    inserts += calls;
                }
            }
        }
        long walBytes;
        try (Connection c = ds.getConnection();
             PreparedStatement ps = c.prepareStatement("SELECT pg_wal_lsn_diff(?::pg_lsn, ?::pg_lsn)::bigint")) {
            ps.setString(1, b.lsn);
            ps.setString(2, a.lsn);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                walBytes = rs.getLong(1);
            }
        } catch (SQLException e) {
            throw new IllegalStateException("could not compare WAL positions: " + e.getMessage(), e);
        }
        return new Delta(!b.statements.isEmpty(), relay, begins, relayWal, inserts, writerWal, walBytes,
                b.inserted - a.inserted, (b.updated - a.updated) + (b.deleted - a.deleted), b.dead - a.dead,
                b.progressUpdated - a.progressUpdated, b.progressHotUpdated - a.progressHotUpdated, byQuery,
                execByQuery);
    }
}
