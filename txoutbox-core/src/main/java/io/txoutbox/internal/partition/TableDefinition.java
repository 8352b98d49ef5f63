package io.txoutbox.internal.partition;

import io.txoutbox.OutboxException;
import io.txoutbox.OutboxSchema;
import io.txoutbox.internal.pg.Identifiers;
import io.txoutbox.internal.pg.IdSequence;
import io.txoutbox.internal.pg.Jdbc;
import io.txoutbox.internal.pg.TableDefinitionStatements;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * What the outbox table carries that {@code CREATE TABLE ... LIKE} does not copy — primary key, indexes, owner,
 * grants, comment, the id sequence — read from the catalog so that the conversion gives it to the table that takes
 * the name (the split's new plain table, the swap's partitioned table).
 */
final class TableDefinition {

    private static final Pattern INDEX_DEF =
            Pattern.compile("^CREATE (UNIQUE )?INDEX \\S+ ON (?:ONLY )?\\S+ (USING .*)$", Pattern.DOTALL);

    private final OutboxSchema schema;
    final String pkName;
    /** {name, definition} of the indexes other than the primary key's. */
    final List<String[]> indexes;
    private final String owner;
    /** The id sequence ({@code pg_get_serial_sequence}); {@code null} if none. */
    final String sequence;
    private final List<String> grants;
    private final List<String> sequenceGrants;
    /** The table's comment; {@code null} if none. */
    final String comment;

    private TableDefinition(OutboxSchema schema, String pkName, List<String[]> indexes, String owner,
            String sequence, List<String> grants, List<String> sequenceGrants, String comment) {
        this.schema = schema;
        this.pkName = pkName;
        this.indexes = indexes;
        this.owner = owner;
        this.sequence = sequence;
        this.grants = grants;
        this.sequenceGrants = sequenceGrants;
        this.comment = comment;
    }

    /** Reads the definition of {@code relation}; its grants are given again on the outbox table's name. */
    static TableDefinition read(Connection c, OutboxSchema schema, String relation) throws SQLException {
        List<String[]> indexes = indexes(c, relation);
        String pkName = primaryKeyName(c, schema, relation);
        String owner = Jdbc.queryString(c, TableDefinitionStatements.OWNER, relation);
        String sequence = IdSequence.sequenceOf(c, relation);
        String target = "TABLE " + schema.qualifiedOutboxTable();
        List<String> grants = new ArrayList<>(grants(c, relation, target));
        grants.addAll(columnGrants(c, relation, target));
        List<String> sequenceGrants = sequence == null ? List.of() : grants(c, sequence, "SEQUENCE %s");
        String comment = Jdbc.queryString(c, TableDefinitionStatements.COMMENT, relation);
        return new TableDefinition(schema, pkName, indexes, owner, sequence, grants, sequenceGrants, comment);
    }

    /** Gives {@code target} the primary key, indexes, owner, grants, and continues the id sequence. */
    void applyTo(Statement st, Connection c, String target, String previousSequence) throws SQLException {
        st.execute(TableDefinitionStatements.addPrimaryKey(target, Identifiers.quote(pkName)));
        for (String[] index : indexes) {
            st.execute(indexOn(target, index[0], index[1]));
        }
        st.execute(TableDefinitionStatements.ownerTo(target, owner));
        for (String grant : grants) {
            st.execute(grant);
        }
        String newSequence = IdSequence.sequenceOf(c, target);
        for (String grant : sequenceGrants) {
            st.execute(String.format(grant, newSequence));
        }
        if (sequence != null) {
            try (PreparedStatement ps = c.prepareStatement(
                    TableDefinitionStatements.continueSequence(previousSequence))) {
                ps.setString(1, target);
                ps.execute();
            }
        }
    }

    /** {name, definition} of the table's indexes other than the primary key's. */
    private static List<String[]> indexes(Connection c, String relation) throws SQLException {
        List<String[]> out = new ArrayList<>();
        try (PreparedStatement ps = c.prepareStatement(TableDefinitionStatements.INDEXES)) {
            ps.setString(1, relation);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    out.add(new String[] {rs.getString(1), rs.getString(2)});
                }
            }
        }
        return out;
    }

    private String indexOn(String target, String name, String definition) {
        Matcher m = INDEX_DEF.matcher(definition);
        if (!m.matches()) {
            throw new OutboxException("cannot re-create index " + name + " on the partitioned " + schema
                    + ": unexpected definition " + definition, null, false);
        }
        if (m.group(1) != null && !definition.contains("event_id")) {
            throw new OutboxException("the unique index " + name + " of " + schema + " does not contain event_id;"
                    + " a partitioned table allows unique indexes only with the partition key: drop it, or keep"
                    + " the plain table", null, false);
        }
        return TableDefinitionStatements.createIndex(m.group(1) != null, Identifiers.quote(name), target,
                m.group(2));
    }

    private static String primaryKeyName(Connection c, OutboxSchema schema, String relation) throws SQLException {
        String name = Jdbc.queryString(c, TableDefinitionStatements.PRIMARY_KEY_NAME, relation);
        if (name == null) {
            throw new OutboxException(schema + " has no primary key: is it a txoutbox table? Run"
                    + " OutboxSchema.migrate without partitioning first", null, false);
        }
        return name;
    }

    /**
     * GRANT statements that give {@code target} the privileges {@code relation} has (the writer role's INSERT on the
     * table, the relay's SELECT on the id sequence); {@code target} may hold a {@code %s} for a name known later.
     */
    private static List<String> grants(Connection c, String relation, String target) throws SQLException {
        List<String> out = new ArrayList<>();
        try (PreparedStatement ps = c.prepareStatement(TableDefinitionStatements.GRANTS)) {
            ps.setString(1, relation);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    out.add(TableDefinitionStatements.grant(rs.getString(2), target, rs.getString(1),
                            rs.getBoolean(3)));
                }
            }
        }
        return out;
    }

    /**
     * GRANT statements for the column privileges of {@code relation} (the relay's, worker's and admin's UPDATE on the
     * state columns only, as {@code OutboxGrants} documents them): {@code aclexplode(relacl)} does not hold them.
     */
    private static List<String> columnGrants(Connection c, String relation, String target) throws SQLException {
        List<String> out = new ArrayList<>();
        try (PreparedStatement ps = c.prepareStatement(TableDefinitionStatements.COLUMN_GRANTS)) {
            ps.setString(1, relation);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    out.add(TableDefinitionStatements.grantColumns(rs.getString(2), rs.getString(4), target,
                            rs.getString(1), rs.getBoolean(3)));
                }
            }
        }
        return out;
    }
}
