package io.txoutbox.internal.pg;

/**
 * The statements that validate CHECK constraints added NOT VALID and count the rows that violate them: the online
 * step of the migrations ({@code ValidateChecks}) and the partition conversion's validate step. Built for one
 * relation, whose name the caller quoted.
 */
public final class CheckStatements {

    /** The NOT VALID CHECK constraints of a relation, by name; binds the relation. */
    public static final String NOT_VALID = """
            SELECT conname FROM pg_constraint
            WHERE conrelid = ?::regclass AND contype = 'c' AND NOT convalidated
            ORDER BY conname""";

    /** Those of the NOT VALID CHECK constraints of a relation that are among some names; binds relation, text[]. */
    public static final String NOT_VALID_AMONG = """
            SELECT conname FROM pg_constraint
            WHERE conrelid = ?::regclass AND contype = 'c' AND NOT convalidated AND conname = ANY(?)
            ORDER BY conname""";

    /** A constraint's own expression; binds relation, constraint name. */
    public static final String EXPRESSION =
            "SELECT pg_get_expr(conbin, conrelid) FROM pg_constraint WHERE conrelid = ?::regclass AND conname = ?";

    /** {@code SET LOCAL lock_timeout} with the value bound; binds e.g. {@code 5000ms}. */
    public static final String SET_LOCAL_LOCK_TIMEOUT = PartitionStatements.SET_LOCAL_LOCK_TIMEOUT;

    /** A validation scans the whole table, which takes as long as the table needs. */
    public static final String NO_STATEMENT_TIMEOUT = "SET LOCAL statement_timeout = 0";

    private final String relation;

    /** @param relation the relation, qualified and quoted */
    public CheckStatements(String relation) {
        this.relation = relation;
    }

    /** Validates one constraint: a scan under SHARE UPDATE EXCLUSIVE (writers go on). */
    public String validate(String quotedConstraint) {
        return "ALTER TABLE " + relation + " VALIDATE CONSTRAINT " + quotedConstraint;
    }

    /**
     * Rows a constraint refuses. The expression is inline SQL: it is the constraint's own, as
     * {@code pg_get_expr} printed it from the catalog ({@link #EXPRESSION}).
     */
    public String countViolations(String expression) {
        return "SELECT count(*) FROM " + relation + " WHERE (" + expression + ") IS FALSE";
    }
}
