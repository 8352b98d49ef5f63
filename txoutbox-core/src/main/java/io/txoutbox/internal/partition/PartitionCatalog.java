package io.txoutbox.internal.partition;

import io.txoutbox.OutboxException;
import io.txoutbox.OutboxSchema;
import io.txoutbox.internal.pg.Identifiers;
import io.txoutbox.internal.partition.PartitionedOutbox.Partition;
import io.txoutbox.internal.pg.CheckStatements;
import io.txoutbox.internal.pg.ConversionStatements;
import io.txoutbox.internal.pg.Jdbc;
import io.txoutbox.internal.pg.PartitionStatements;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.UUID;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * What the catalog says about the outbox table: whether it is partitioned, its partitions and their bounds, its
 * columns, and the traces a conversion leaves (the legacy child and its bound check). Reads only; each runs in the
 * caller's transaction.
 */
final class PartitionCatalog {

    private static final Pattern RANGE = Pattern.compile("FOR VALUES FROM \\((.+)\\) TO \\((.+)\\)");
    private static final Pattern UUID_IN_CHECK =
            Pattern.compile("'([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})'");

    /** How far the conversion of the outbox table into a partitioned one got. */
    enum Stage { MISSING, PLAIN, SPLIT, PARTITIONED }

    /** Where a conversion stands: for {@link Stage#SPLIT}, the legacy table's bound and whether it is validated. */
    record State(Stage stage, UUID bound, boolean boundValidated, boolean leftoverCheck) {
    }

    /** A CHECK constraint's bound ({@code null} if its definition holds no UUID) and whether it is validated. */
    private record BoundCheck(UUID bound, boolean validated) {
    }

    private PartitionCatalog() {
    }

    /** The kind of the relation {@code name} of {@code schemaName} ({@code null}: there is none). */
    static String relkind(Connection c, String schemaName, String name) throws SQLException {
        return Jdbc.queryString(c, PartitionStatements.RELKIND, schemaName, name);
    }

    /** Whether the outbox table exists and is a partitioned table. */
    static boolean isPartitioned(Connection c, OutboxSchema schema) throws SQLException {
        return "p".equals(relkind(c, schema.schema(), schema.outboxTable()));
    }

    /** The partitions of {@code parent}, in range order, the default one last. */
    static List<Partition> partitions(Connection c, String parent) throws SQLException {
        List<Partition> out = new ArrayList<>();
        try (PreparedStatement ps = c.prepareStatement(PartitionStatements.PARTITIONS)) {
            ps.setString(1, parent);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    out.add(parse(rs.getString(1), rs.getString(2)));
                }
            }
        }
        out.sort(Comparator.comparing(Partition::isDefault)
                .thenComparing(p -> p.from() == null ? new UUID(0, 0) : p.from(), PartitionBounds::compare));
        return out;
    }

    /** A partition from its name and its bound expression as {@code pg_get_expr} prints it. */
    static Partition parse(String name, String boundExpr) {
        if ("DEFAULT".equals(boundExpr)) {
            return new Partition(name, null, null, true);
        }
        Matcher m = RANGE.matcher(boundExpr);
        if (!m.matches()) {
            throw new OutboxException("partition " + name + " has bounds txoutbox does not understand: " + boundExpr
                    + "; only FROM (uuid) TO (uuid) ranges and DEFAULT belong on an outbox table", null, false);
        }
        return new Partition(name, value(m.group(1)), value(m.group(2)), false);
    }

    private static UUID value(String v) {
        if (v.equals("MINVALUE") || v.equals("MAXVALUE")) {
            return null;
        }
        return UUID.fromString(v.replace("'", ""));
    }

    /** The quoted names of the columns an INSERT ... SELECT copies, comma-separated. */
    static String insertableColumns(Connection c, String relation) throws SQLException {
        List<String> names = new ArrayList<>();
        try (PreparedStatement ps = c.prepareStatement(PartitionStatements.INSERTABLE_COLUMNS)) {
            ps.setString(1, relation);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    names.add(Identifiers.quote(rs.getString(1)));
                }
            }
        }
        return String.join(", ", names);
    }

    /**
     * Where the conversion of the outbox table stands: whether the table is there and partitioned, whether
     * {@code legacy} is split off as its inheritance child, and the bound check {@code check} (on the legacy table;
     * on the plain table only as the leftover of an older release's failed conversion).
     */
    static State conversionState(Connection c, OutboxSchema schema, String legacy, String check)
            throws SQLException {
        String kind = relkind(c, schema.schema(), schema.outboxTable());
        if (kind == null) {
            return new State(Stage.MISSING, null, false, false);
        }
        if ("p".equals(kind)) {
            return new State(Stage.PARTITIONED, null, false, false);
        }
        String parent = schema.qualifiedOutboxTable();
        String qualifiedLegacy = Identifiers.quote(schema.schema()) + "." + Identifiers.quote(legacy);
        boolean split = inherits(c, qualifiedLegacy, parent);
        BoundCheck bound = boundCheck(c, split ? qualifiedLegacy : parent, check);
        if (bound == null) {
            return new State(split ? Stage.SPLIT : Stage.PLAIN, null, false, false);
        }
        if (!split) {
            return new State(Stage.PLAIN, null, false, true);
        }
        return new State(Stage.SPLIT, bound.bound(), bound.validated(), false);
    }

    /** Whether {@code child} (which may not exist) is an inheritance child of {@code parent}. */
    private static boolean inherits(Connection c, String child, String parent) throws SQLException {
        return Jdbc.queryLong(c, ConversionStatements.IS_INHERITANCE_CHILD, child, parent).orElse(0) > 0;
    }

    /** The CHECK constraint {@code name} of {@code relation}; {@code null} when there is none. */
    private static BoundCheck boundCheck(Connection c, String relation, String name) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(ConversionStatements.CHECK_DEFINITION)) {
            ps.setString(1, relation);
            ps.setString(2, name);
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next()) {
                    return null;
                }
                Matcher m = UUID_IN_CHECK.matcher(rs.getString(1));
                return new BoundCheck(m.find() ? UUID.fromString(m.group(1)) : null, rs.getBoolean(2));
            }
        }
    }

    /** The names of the NOT VALID CHECK constraints of {@code relation}, in order. */
    static List<String> notValidChecks(Connection c, String relation) throws SQLException {
        List<String> out = new ArrayList<>();
        try (PreparedStatement ps = c.prepareStatement(CheckStatements.NOT_VALID)) {
            ps.setString(1, relation);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    out.add(rs.getString(1));
                }
            }
        }
        return out;
    }

    /** Whether the constraint {@code name} of {@code relation} exists and is validated. */
    static boolean validated(Connection c, String relation, String name) throws SQLException {
        return Jdbc.queryBoolean(c, ConversionStatements.CONSTRAINT_VALIDATED, relation, name);
    }
}
