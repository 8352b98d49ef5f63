package io.txoutbox.internal.pg;

import io.txoutbox.InvalidConfigurationException;
import io.txoutbox.internal.MessageRules;
import java.util.regex.Pattern;

/** Validation and quoting of SQL identifiers that come from configuration. */
public final class Identifiers {

    private static final Pattern IDENTIFIER = Pattern.compile("^[a-z_][a-z0-9_]{0,62}$");
    /** The longest suffix appended to the outbox table's name for its indexes and constraints. */
    public static final String LONGEST_SUFFIX = "_schema_history";

    private Identifiers() {
    }

    public static String require(String property, String value) {
        String problem = problem(value);
        if (problem != null) {
            throw new InvalidConfigurationException(property + " " + problem);
        }
        return value;
    }

    /** Why {@code value} is not an identifier this library accepts, or {@code null} when it is one. */
    public static String problem(String value) {
        if (value == null || !IDENTIFIER.matcher(value).matches()) {
            String shown = value == null ? "null"
                    : "'" + MessageRules.printable(value) + "'" + (value.length() > 63 ? " (" + value.length()
                            + " characters)" : "");
            return "must match ^[a-z_][a-z0-9_]{0,62}$ (lower-case letters, digits and underscores, at most 63 "
                    + "characters), was " + shown;
        }
        return null;
    }

    /**
     * Why derived names (table name plus a suffix) would not fit PostgreSQL's 63 bytes (they would be truncated), or
     * {@code null} when they fit.
     */
    public static String roomForSuffixProblem(String value, String suffix) {
        if (value.length() + suffix.length() > 63) {
            return "must be at most " + (63 - suffix.length()) + " characters so that derived names like '" + value
                    + suffix + "' fit in 63, was " + value.length();
        }
        return null;
    }

    /** Double-quotes an identifier that {@link #require} accepted. */
    public static String quote(String identifier) {
        if (!IDENTIFIER.matcher(identifier).matches()) {
            throw new IllegalArgumentException("refusing to quote an unvalidated identifier");
        }
        return '"' + identifier + '"';
    }
}
