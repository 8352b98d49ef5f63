package io.txoutbox.internal.pg;

/**
 * The statements that read what {@code CREATE TABLE ... LIKE} does not copy (primary key, indexes, owner, grants,
 * comment, the id sequence's position) and give it to another table: the partition conversion's split and swap.
 *
 * <p>The reads bind the relation. The statements they lead to are DDL, which takes no parameter: GRANT, OWNER TO and
 * CREATE INDEX are assembled from names the catalog returned quoted ({@code quote_ident}, {@code pg_get_indexdef})
 * and from the target's quoted name.
 */
public final class TableDefinitionStatements {

    /** {name, definition} of a table's indexes other than the primary key's, by name; binds the relation. */
    public static final String INDEXES = """
            SELECT ic.relname, pg_get_indexdef(i.indexrelid)
            FROM pg_index i JOIN pg_class ic ON ic.oid = i.indexrelid
            WHERE i.indrelid = ?::regclass AND NOT i.indisprimary
            ORDER BY ic.relname""";

    /** The name of a table's primary key; binds the relation. */
    public static final String PRIMARY_KEY_NAME =
            "SELECT conname FROM pg_constraint WHERE conrelid = ?::regclass AND contype = 'p'";

    /** A relation's owner, quoted; binds the relation. */
    public static final String OWNER =
            "SELECT quote_ident(pg_get_userbyid(relowner)) FROM pg_class WHERE oid = ?::regclass";

    /** A relation's comment; binds the relation. */
    public static final String COMMENT = "SELECT obj_description(?::regclass, 'pg_class')";

    /**
     * A relation's privileges other than its owner's: {grantee (quoted, or PUBLIC), privilege, grantable}; binds the
     * relation.
     */
    public static final String GRANTS = """
            SELECT CASE WHEN a.grantee = 0 THEN 'PUBLIC' ELSE quote_ident(pg_get_userbyid(a.grantee)) END,
                   a.privilege_type, a.is_grantable
            FROM pg_class t, aclexplode(t.relacl) a
            WHERE t.oid = ?::regclass AND a.grantee <> t.relowner""";

    /**
     * A table's column privileges, which {@code aclexplode(relacl)} does not hold: {grantee, privilege, grantable,
     * quoted column list}; binds the relation.
     */
    public static final String COLUMN_GRANTS = """
            SELECT CASE WHEN x.grantee = 0 THEN 'PUBLIC' ELSE quote_ident(pg_get_userbyid(x.grantee)) END,
                   x.privilege_type, x.is_grantable, string_agg(quote_ident(a.attname), ', ' ORDER BY a.attnum)
            FROM pg_class t JOIN pg_attribute a ON a.attrelid = t.oid, aclexplode(a.attacl) x
            WHERE t.oid = ?::regclass AND a.attnum > 0 AND NOT a.attisdropped AND x.grantee <> t.relowner
            GROUP BY 1, 2, 3 ORDER BY 1, 2""";

    private TableDefinitionStatements() {
    }

    /**
     * Sets the {@code id} sequence of a table (bound) to where {@code previousSequence} (quoted, as
     * {@code pg_get_serial_sequence} returns it) stands, so ids continue.
     */
    public static String continueSequence(String previousSequence) {
        return "SELECT setval(pg_get_serial_sequence(?, 'id'), s.last_value, s.is_called) FROM " + previousSequence
                + " s";
    }

    /** The primary key on {@code event_id}, under its previous name. */
    public static String addPrimaryKey(String target, String quotedName) {
        return "ALTER TABLE " + target + " ADD CONSTRAINT " + quotedName + " PRIMARY KEY (event_id)";
    }

    /** An index re-created on {@code target}: {@code using} is the rest of its {@code pg_get_indexdef}. */
    public static String createIndex(boolean unique, String quotedName, String target, String using) {
        return "CREATE " + (unique ? "UNIQUE " : "") + "INDEX " + quotedName + " ON " + target + " " + using;
    }

    /** Gives {@code target} an owner ({@code owner} as the catalog quoted it). */
    public static String ownerTo(String target, String owner) {
        return "ALTER TABLE " + target + " OWNER TO " + owner;
    }

    /** A table privilege; {@code target} is e.g. {@code TABLE "s"."t"}, and may hold a {@code %s} filled in later. */
    public static String grant(String privilege, String target, String grantee, boolean grantable) {
        return "GRANT " + privilege + " ON " + target + " TO " + grantee + (grantable ? " WITH GRANT OPTION" : "");
    }

    /** A column privilege ({@code columns} quoted, comma-separated). */
    public static String grantColumns(String privilege, String columns, String target, String grantee,
            boolean grantable) {
        return "GRANT " + privilege + " (" + columns + ") ON " + target + " TO " + grantee
                + (grantable ? " WITH GRANT OPTION" : "");
    }
}
