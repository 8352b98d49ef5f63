package io.txoutbox.internal.pg;

import java.util.List;

/**
 * The privilege check a long-running component runs at start: one row with a boolean per privilege it needs, each a
 * {@code has_*_privilege} call whose object, column and privilege names are bind parameters. (The GRANT statements
 * themselves are text for the tables' owner to run, rendered by {@code Privileges}.)
 */
public final class PrivilegeStatements {

    /** Binds: schema name (unquoted), privilege. */
    public static final String SCHEMA = "has_schema_privilege(?, ?)";
    /** Binds: quoted, qualified sequence, privilege. */
    public static final String SEQUENCE = "has_sequence_privilege(?, ?)";
    /** Binds: quoted, qualified function with its argument types, privilege. */
    public static final String FUNCTION = "has_function_privilege(?, ?)";
    /** The database the session is in; bind: privilege. */
    public static final String DATABASE = "has_database_privilege(current_database(), ?)";
    /** Binds: quoted, qualified table, privilege. */
    public static final String TABLE = "has_table_privilege(?, ?)";
    /** Binds: quoted, qualified table, column, privilege. */
    public static final String COLUMN = "has_column_privilege(?, ?, ?)";

    private PrivilegeStatements() {
    }

    /** The session's role. */
    public static String currentUser() {
        return "SELECT current_user";
    }

    /** One row: the result of each check, in order (binds: the checks' binds, in order). */
    public static String holds(List<String> checks) {
        return "SELECT " + String.join(", ", checks);
    }
}
