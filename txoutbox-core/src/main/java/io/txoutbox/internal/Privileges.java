package io.txoutbox.internal;

import io.txoutbox.internal.pg.ReadCommitted;
import io.txoutbox.internal.pg.Identifiers;
import io.txoutbox.OutboxException;
import io.txoutbox.OutboxGrants.Component;
import io.txoutbox.OutboxSchema;
import io.txoutbox.internal.pg.Jdbc;
import io.txoutbox.internal.pg.PgErrors;
import io.txoutbox.internal.pg.PrivilegeStatements;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import javax.sql.DataSource;
import org.slf4j.Logger;

/**
 * The privileges each component needs, in one place: rendered as GRANT statements (docs/operations.md's and the tests'), and
 * checked for the session's role with {@code has_*_privilege} when a long-running component starts, so that a missing
 * one is named at once instead of failing every cycle.
 */
public final class Privileges {

    /** What a grant is on. */
    enum Kind { SCHEMA, TABLE, SEQUENCE, FUNCTION, DATABASE }

    /**
     * One GRANT: {@code privileges} on {@code object} (quoted, qualified; a function with its argument types), on
     * {@code columns} only when there are any.
     */
    record Grant(Kind kind, List<String> privileges, String object, List<String> columns) {

        String sql(String role) {
            String to = " TO " + quoteRole(role);
            if (kind == Kind.DATABASE) {
                // The database is the one the statement runs in (GRANT takes no expression for it). CREATE there
                // lets the owner create the schema and own it; a schema that exists already (public, say) must also
                // let it create tables.
                String schema = object.replace("\"", "");
                return "DO $$ BEGIN EXECUTE format('GRANT " + String.join(", ", privileges)
                        + " ON DATABASE %I TO %I', current_database(), " + literal(role) + "); IF EXISTS (SELECT FROM"
                        + " pg_namespace WHERE nspname = " + literal(schema) + ") THEN EXECUTE format('GRANT USAGE,"
                        + " CREATE ON SCHEMA %I TO %I', " + literal(schema) + ", " + literal(role)
                        + "); END IF; END $$";
            }
            String cols = columns.isEmpty() ? "" : " (" + String.join(", ", columns) + ")";
            return "GRANT " + String.join(", ", privileges) + cols + " ON " + kind + " " + object + to;
        }

        /** One boolean SQL expression per privilege (and column): whether the session's role holds it. */
        List<Check> checks() {
            List<Check> out = new ArrayList<>();
            for (String p : privileges) {
                switch (kind) {
                    // a schema is named, not parsed (the other objects are parsed like regclass): no quotes
                    case SCHEMA -> out.add(new Check(PrivilegeStatements.SCHEMA, object.replace("\"", ""), p));
                    case SEQUENCE -> out.add(new Check(PrivilegeStatements.SEQUENCE, object, p));
                    case FUNCTION -> out.add(new Check(PrivilegeStatements.FUNCTION, object, p));
                    case DATABASE -> out.add(new Check(PrivilegeStatements.DATABASE, p));
                    case TABLE -> {
                        if (columns.isEmpty()) {
                            out.add(new Check(PrivilegeStatements.TABLE, object, p));
                        } else {
                            for (String c : columns) {
                                out.add(new Check(PrivilegeStatements.COLUMN, object, c, p));
                            }
                        }
                    }
                }
            }
            return out;
        }

        private static String literal(String s) {
            return "'" + s.replace("'", "''") + "'";
        }

        /** A role name as PostgreSQL prints it in quotes; the name may come from {@code current_user}. */
        private static String quoteRole(String role) {
            return '"' + role.replace("\"", "\"\"") + '"';
        }
    }

    /** A {@code has_*_privilege} call with its arguments as bind parameters. */
    record Check(String sql, String... binds) {
    }

    private Privileges() {
    }

    /** The grants {@code component} needs on {@code schema}'s objects, in the order they should run. */
    static List<Grant> of(OutboxSchema schema, Component component) {
        String s = Identifiers.quote(schema.schema());
        String outbox = schema.qualifiedOutboxTable();
        String sequence = s + "." + Identifiers.quote(schema.outboxTable() + "_id_seq");
        String replay = s + "." + Identifiers.quote(schema.outboxTable() + "_replay");
        String installation = s + "." + Identifiers.quote(schema.outboxTable() + "_installation");
        // the cursor progress model's lane cursors: written by the relay, read by whatever tells published rows
        String progress = s + "." + Identifiers.quote(schema.outboxTable() + "_progress");
        String inbox = s + ".inbox_event";
        String processed = s + ".processed_event";
        String versions = s + ".applied_version";
        // The generated shard column calls it on INSERT (and PostgreSQL may recompute it on UPDATE); PUBLIC holds
        // EXECUTE unless the DBA revoked it.
        Grant shard = new Grant(Kind.FUNCTION, List.of("EXECUTE"), s + ".txoutbox_shard(text, integer)", List.of());
        Grant usage = new Grant(Kind.SCHEMA, List.of("USAGE"), s, List.of());
        List<Grant> g = new ArrayList<>();
        switch (component) {
            case WRITER -> {
                g.add(usage);
                g.add(table(outbox, "INSERT"));
                g.add(shard);
                // the default of event_id, for writers in other languages that do not give one
                g.add(new Grant(Kind.FUNCTION, List.of("EXECUTE"), s + ".txoutbox_uuidv7()", List.of()));
            }
            case RELAY -> {
                g.add(usage);
                g.add(table(outbox, "SELECT"));
                g.add(columns(outbox, "UPDATE", "state", "published_at", "attempts", "last_error", "failed_at",
                        "next_attempt_at"));
                g.add(new Grant(Kind.SEQUENCE, List.of("SELECT"), sequence, List.of())); // the claim floor
                g.add(shard);
                g.add(table(installation, "SELECT")); // the lanes' fencing ids
                g.add(table(progress, "SELECT", "INSERT", "UPDATE")); // the lanes' cursors
            }
            case RETENTION -> {
                g.add(usage);
                g.add(table(outbox, "SELECT", "DELETE"));
                g.add(new Grant(Kind.SEQUENCE, List.of("SELECT"), sequence, List.of())); // where the walk ends
                g.add(table(progress, "SELECT"));
            }
            case INBOX_RETENTION -> {
                g.add(usage);
                g.add(table(processed, "SELECT", "DELETE"));
                g.add(table(inbox, "SELECT", "DELETE"));
            }
            case ADMIN -> {
                g.add(usage);
                g.add(table(outbox, "SELECT"));
                g.add(columns(outbox, "UPDATE", "state", "attempts", "next_attempt_at", "last_error",
                        "operator_action", "operator_name", "operator_at"));
                g.add(table(inbox, "SELECT"));
                g.add(columns(inbox, "UPDATE", "state", "attempts", "next_attempt_at", "last_error",
                        "operator_action", "operator_name", "operator_at"));
                g.add(shard);
                g.add(table(progress, "SELECT"));
            }
            case REPLAY -> {
                g.add(usage);
                g.add(table(outbox, "SELECT"));
                g.add(table(progress, "SELECT"));
                g.add(new Grant(Kind.SEQUENCE, List.of("SELECT"), sequence, List.of())); // the replay's upper bound
                g.add(table(replay, "SELECT", "INSERT", "UPDATE", "DELETE")); // its checkpoint
            }
            case INBOX_RECEIVER -> {
                g.add(usage);
                g.add(table(inbox, "INSERT"));
                g.add(shard);
            }
            case INBOX_WORKER -> {
                g.add(usage);
                g.add(table(inbox, "SELECT"));
                g.add(columns(inbox, "UPDATE", "state", "processed_at", "next_attempt_at", "attempts", "last_error",
                        "failed_at"));
                g.add(shard);
            }
            case DEDUPE -> {
                g.add(usage);
                g.add(table(processed, "INSERT"));
                g.add(table(versions, "INSERT"));
                g.add(columns(versions, "SELECT", "consumer", "aggregate_type", "aggregate_id", "version"));
                g.add(columns(versions, "UPDATE", "version", "applied_at"));
            }
            case MIGRATION_OWNER -> g.add(new Grant(Kind.DATABASE, List.of("CREATE"), s, List.of()));
        }
        return g;
    }

    private static Grant table(String table, String... privileges) {
        return new Grant(Kind.TABLE, List.of(privileges), table, List.of());
    }

    private static Grant columns(String table, String privilege, String... columns) {
        return new Grant(Kind.TABLE, List.of(privilege), table, List.of(columns));
    }

    /** The GRANT statements for {@code role}. */
    public static List<String> sql(OutboxSchema schema, Component component, String role) {
        List<String> out = new ArrayList<>();
        for (Grant g : of(schema, component)) {
            out.add(g.sql(role));
        }
        return out;
    }

    /**
     * The GRANT statements the session's role lacks for {@code component} (empty: it holds them all), by one query of
     * {@code has_*_privilege}. An object that does not exist (the schema not migrated yet) raises PostgreSQL's error:
     * the callers then start without the check, as before it existed.
     */
    public static List<String> missing(Connection c, OutboxSchema schema, Component component) throws SQLException {
        List<Grant> grants = of(schema, component);
        List<String> exprs = new ArrayList<>();
        List<Object> binds = new ArrayList<>();
        List<Integer> owner = new ArrayList<>();
        for (int i = 0; i < grants.size(); i++) {
            for (Check check : grants.get(i).checks()) {
                exprs.add(check.sql());
                binds.addAll(List.of(check.binds()));
                owner.add(i);
            }
        }
        String role = Jdbc.queryString(c, PrivilegeStatements.currentUser());
        boolean[] held = new boolean[exprs.size()];
        try (PreparedStatement ps = c.prepareStatement(PrivilegeStatements.holds(exprs))) {
            Jdbc.bind(ps, binds.toArray());
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                for (int i = 0; i < exprs.size(); i++) {
                    held[i] = rs.getBoolean(i + 1);
                }
            }
        }
        List<String> out = new ArrayList<>();
        boolean[] reported = new boolean[grants.size()];
        for (int i = 0; i < exprs.size(); i++) {
            int g = owner.get(i);
            if (!held[i] && !reported[g]) {
                reported[g] = true;
                out.add(grants.get(g).sql(role));
            }
        }
        return out;
    }

    /**
     * Refuses the start of a long-running component ({@code who}, e.g. "relay 'orders'") whose role lacks a privilege
     * of {@code components}: every cycle would fail on it and publish or process nothing. A check that cannot run (the
     * database is unreachable, the schema not migrated yet) only warns on {@code log}: the component starts, and a
     * missing privilege then stops it when it meets one.
     */
    public static void requireAtStart(DataSource dataSource, OutboxSchema schema, String who, Logger log,
            List<Component> components) {
        List<String> missing = new ArrayList<>();
        try (Connection c = ReadCommitted.open(dataSource)) {
            for (Component component : components) {
                missing.addAll(missing(c, schema, component));
            }
        } catch (SQLException | RuntimeException e) {
            log.warn("{}: could not check its privileges at start ({}); starting anyway, a missing privilege stops it"
                    + " when it meets one", who, e.toString());
            return;
        }
        if (!missing.isEmpty()) {
            throw new OutboxException(message(who + " cannot start", schema, components.get(0), missing), null, false);
        }
    }

    /** Whether {@code e} (or a cause) is PostgreSQL's "insufficient privilege" (SQLState 42501). */
    public static boolean isDenied(Throwable e) {
        return PgErrors.anyInChain(e, PgErrors.INSUFFICIENT_PRIVILEGE);
    }

    /**
     * For an error of a single call ({@code publish}, {@code receive}, an admin call): when it is "permission denied",
     * which grants the role needs; else empty.
     */
    public static String hint(SQLException e, Component component) {
        return isDenied(e) ? " The database role lacks a privilege: grant it what OutboxGrants.sql(schema, "
                + component + ", role) lists." : "";
    }

    /**
     * A message for a component that lacks privileges: what happened ({@code what}, e.g. "relay x cannot start"),
     * for which tables, and the statements to run (as the tables' owner).
     */
    public static String message(String what, OutboxSchema schema, Component component, List<String> missing) {
        return what + ": its database role lacks " + missing.size()
                + (missing.size() == 1 ? " privilege" : " privileges") + " on " + schema
                + "; run as the tables' owner: " + String.join("; ", missing)
                + " (OutboxGrants.sql(schema, " + component + ", role) lists all it needs)";
    }
}
