package io.txoutbox.internal.progress;

import io.txoutbox.OutboxSchema;
import io.txoutbox.internal.pg.EventState;
import io.txoutbox.internal.pg.Jdbc;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Takes an outbox table from the cursor progress model back to the row-state one, with the relays stopped: the rows
 * the cursors say are published become PUBLISHED (id range by id range, a short transaction each, so no lock is held
 * long and a stopped run resumes where it was), then, in one transaction, HELD rows become PENDING and the cursors
 * are deleted. Nothing is sent twice and nothing is lost: the cursors' published rows are exactly the ones marked.
 * {@code published_at} of a marked row is its {@code created_at}, as the cursor model reads it.
 */
public final class ProgressConversion {

    private static final Logger log = LoggerFactory.getLogger(ProgressConversion.class);
    /** Ids per transaction of the marking. */
    static final long RANGE = 20_000;

    private ProgressConversion() {
    }

    /** The conversion on {@code c} (autocommit off, READ COMMITTED); returns how many rows it marked PUBLISHED. */
    public static long toRowState(Connection c, OutboxSchema schema) throws SQLException {
        CursorStatements sql = new CursorStatements(schema);
        String t = schema.qualifiedOutboxTable();
        String pending = EventState.PENDING.sql();
        long first = Jdbc.queryLong(c, "SELECT min(id) FROM " + t + " WHERE state = " + pending).orElse(0);
        long last = Jdbc.queryLong(c, "SELECT max(through_id) FROM " + sql.progressTable()).orElse(0);
        c.commit();
        long marked = 0;
        String mark = "UPDATE " + t + " o SET state = " + EventState.PUBLISHED.sql() + ", published_at = "
                + "coalesce(o.published_at, o.created_at) WHERE o.state = " + pending + " AND o.next_attempt_at IS NULL"
                + " AND o.id >= ? AND o.id < ? AND o.id <= " + sql.cursorOf("o.shard");
        for (long from = first; from <= last; from += RANGE) {
            try (PreparedStatement ps = c.prepareStatement(mark)) {
                ps.setLong(1, from);
                ps.setLong(2, from + RANGE);
                marked += ps.executeUpdate();
            }
            c.commit();
        }
        try (PreparedStatement held = c.prepareStatement("UPDATE " + t + " SET state = " + pending + " WHERE state = "
                + EventState.HELD.sql()); PreparedStatement cursors = c.prepareStatement("DELETE FROM "
                + sql.progressTable())) {
            held.executeUpdate();
            cursors.executeUpdate();
        }
        c.commit();
        log.info("txoutbox: {} now records progress per row: {} rows the cursors had published marked PUBLISHED",
                schema, marked);
        return marked;
    }

    /** Whether {@code schema}'s table has cursors (its relays ran on the cursor model). */
    public static boolean hasCursors(Connection c, OutboxSchema schema) throws SQLException {
        String table = new CursorStatements(schema).progressTable();
        if (Jdbc.queryString(c, "SELECT to_regclass('" + table.replace("'", "''") + "')::text") == null) {
            return false;
        }
        return Jdbc.queryLong(c, "SELECT count(*) FROM (SELECT 1 FROM " + table + " LIMIT 1) x").orElse(0) > 0;
    }
}
