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
        if (value == null || !IDENTIFIER.matcher(value).matches()) {
            String shown = value == null ? "null"
                    : "'" + MessageRules.printable(value) + "'" + (value.length() > 63 ? " (" + value.length()
                            + " characters)" : "");
            throw new InvalidConfigurationException(property + " must match ^[a-z_][a-z0-9_]{0,62}$ (lower-case "
                    + "letters, digits and underscores, at most 63 characters), was " + shown);
        }
        return value;
    }

    /** Derived names (table name plus a suffix) must also fit PostgreSQL's 63 bytes, or they would be truncated. */
    public static void requireRoomForSuffix(String property, String value, String suffix) {
        if (value.length() + suffix.length() > 63) {
            throw new InvalidConfigurationException(property + " must be at most " + (63 - suffix.length())
                    + " characters so that derived names like '" + value + suffix + "' fit in 63, was "
                    + value.length());
        }
    }

    /** Double-quotes an identifier that {@link #require} accepted. */
    public static String quote(String identifier) {
        if (!IDENTIFIER.matcher(identifier).matches()) {
            throw new IllegalArgumentException("refusing to quote an unvalidated identifier");
        }
        return '"' + identifier + '"';
    }
}
