package io.txoutbox.internal;

import io.txoutbox.internal.pg.Identifiers;
import io.txoutbox.OutboxSchema;
import io.txoutbox.internal.pg.CheckStatements;
import io.txoutbox.internal.pg.Jdbc;
import io.txoutbox.internal.pg.PgErrors;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The online step that validates CHECK constraints a script added {@code NOT VALID}: one {@code VALIDATE CONSTRAINT}
 * per constraint and transaction, which scans the table under SHARE UPDATE EXCLUSIVE (writers, the relay and the
 * admin go on; on a partitioned table PostgreSQL validates every partition). A constraint that existing rows violate
 * stays NOT VALID — it still refuses every new row — and the step says how many rows and how to fix them.
 */
public final class ValidateChecks implements OnlineStep {

    /** How long a VALIDATE waits for its lock (behind a VACUUM, DDL, another validation) before the next migrate. */
    static final Duration LOCK_TIMEOUT = Duration.ofSeconds(5);

    private final List<String> constraints;
    private final String fix;

    /**
     * @param constraints the constraint names, on the outbox table
     * @param fix         what an operator does about rows that violate them, for the warning
     */
    public ValidateChecks(List<String> constraints, String fix) {
        this.constraints = List.copyOf(constraints);
        this.fix = fix;
    }

    @Override
    public String run(Connection c, OutboxSchema schema) throws SQLException {
        String table = schema.qualifiedOutboxTable();
        CheckStatements statements = new CheckStatements(table);
        List<String> notValid = notValid(c, table);
        c.commit();
        Map<String, Long> violated = new LinkedHashMap<>();
        List<String> busy = new ArrayList<>();
        for (String name : notValid) {
            if (!busy.isEmpty()) {
                busy.add(name); // the lock the first one waited for is the same for all
                continue;
            }
            try (Statement st = c.createStatement()) {
                Jdbc.queryString(c, CheckStatements.SET_LOCAL_LOCK_TIMEOUT, LOCK_TIMEOUT.toMillis() + "ms");
                st.execute(CheckStatements.NO_STATEMENT_TIMEOUT); // the scan takes as long as the table needs
                st.execute(statements.validate(Identifiers.quote(name)));
                c.commit();
            } catch (SQLException e) {
                Jdbc.rollbackQuietly(c);
                if (PgErrors.is(e, PgErrors.CHECK_VIOLATION)) {
                    violated.put(name, violations(c, table, name));
                    c.commit();
                } else if (PgErrors.is(e, PgErrors.LOCK_NOT_AVAILABLE)) {
                    busy.add(name);
                } else {
                    throw e;
                }
            }
        }
        if (violated.isEmpty() && busy.isEmpty()) {
            return null;
        }
        StringBuilder b = new StringBuilder();
        if (!violated.isEmpty()) {
            long rows = violated.values().stream().mapToLong(Long::longValue).sum();
            b.append(rows).append(rows == 1 ? " row violates " : " rows violate ").append(violated).append(": ")
                    .append(fix)
                    .append(". Those constraints stay NOT VALID until then; they already refuse every new row,"
                            + " and the next migrate validates them.");
        }
        if (!busy.isEmpty()) {
            b.append(b.isEmpty() ? "" : " ").append("constraints ").append(busy)
                    .append(" stay NOT VALID for now: their validation waited ").append(LOCK_TIMEOUT.toSeconds())
                    .append(" s for its lock (SHARE UPDATE EXCLUSIVE, taken by VACUUM and DDL too); the next"
                            + " migrate validates them.");
        }
        return b.toString();
    }

    private List<String> notValid(Connection c, String table) throws SQLException {
        return notValid(c, table, constraints);
    }

    /**
     * Rows that violate each of {@code names} that is NOT VALID on {@code table} (a scan per constraint); only the
     * constraints with violating rows are in the map.
     */
    static Map<String, Long> violations(Connection c, String table, List<String> names) throws SQLException {
        Map<String, Long> out = new LinkedHashMap<>();
        for (String name : notValid(c, table, names)) {
            long n = violations(c, table, name);
            if (n > 0) {
                out.put(name, n);
            }
        }
        return out;
    }

    private static List<String> notValid(Connection c, String table, List<String> names) throws SQLException {
        List<String> out = new ArrayList<>();
        try (PreparedStatement ps = c.prepareStatement(CheckStatements.NOT_VALID_AMONG)) {
            ps.setString(1, table);
            ps.setArray(2, c.createArrayOf("text", names.toArray()));
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    out.add(rs.getString(1));
                }
            }
        }
        return out;
    }

    /** Rows the constraint refuses: its own expression, read from the catalog, evaluates to false. */
    private static long violations(Connection c, String table, String name) throws SQLException {
        String expression;
        try (PreparedStatement ps = c.prepareStatement(CheckStatements.EXPRESSION)) {
            ps.setString(1, table);
            ps.setString(2, name);
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next()) {
                    return 0; // dropped meanwhile
                }
                expression = rs.getString(1);
            }
        }
        try (Statement st = c.createStatement();
                ResultSet rs = st.executeQuery(new CheckStatements(table).countViolations(expression))) {
            rs.next();
            return rs.getLong(1);
        }
    }
}
