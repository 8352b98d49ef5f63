package io.txoutbox.internal.config;

import io.txoutbox.InvalidConfigurationException;
import io.txoutbox.OutboxSchema;
import io.txoutbox.internal.pg.Identifiers;
import java.time.Duration;
import java.util.regex.Pattern;

/**
 * The one validator of every configuration record: each message names the property as a builder call
 * ({@code relay.batchSize}), the value it rejected, and the property as a setting: {@code relay.batchSize must be
 * between 1 and 10000, was 0 (setting txoutbox.relay.batch-size)}.
 */
public final class Checks {

    private static final Pattern NAME = Pattern.compile("[A-Za-z0-9._-]{1,100}");
    private static final Pattern TOPIC = Pattern.compile("[a-zA-Z0-9._-]{1,249}");

    private Checks() {
    }

    /** {@code relay.batchSize} → {@code txoutbox.relay.batch-size}. */
    public static String settingName(String property) {
        return "txoutbox." + Values.kebab(property);
    }

    /** {@code property problem (setting txoutbox.x.y)}. */
    public static InvalidConfigurationException invalid(String property, String problem) {
        return new InvalidConfigurationException(property + " " + problem + " (setting " + settingName(property)
                + ")");
    }

    public static <T> T notNull(String property, T value) {
        if (value == null) {
            throw invalid(property, "must not be null");
        }
        return value;
    }

    public static int between(String property, int value, int min, int max) {
        if (value < min || value > max) {
            throw invalid(property, "must be between " + min + " and " + max + ", was " + value);
        }
        return value;
    }

    public static long between(String property, long value, long min, long max) {
        if (value < min || value > max) {
            throw invalid(property, "must be between " + min + " and " + max + ", was " + value);
        }
        return value;
    }

    public static long atLeast(String property, long value, long min) {
        if (value < min) {
            throw invalid(property, "must be >= " + min + ", was " + value);
        }
        return value;
    }

    /** Not null, and longer than zero. */
    public static Duration positive(String property, Duration value) {
        if (value == null || value.isNegative() || value.isZero()) {
            throw invalid(property, "must be > 0, was " + Values.format(value));
        }
        return value;
    }

    /** Not null, and zero or longer. */
    public static Duration notNegative(String property, Duration value) {
        if (value == null || value.isNegative()) {
            throw invalid(property, "must be >= 0, was " + Values.format(value));
        }
        return value;
    }

    /** Not null, and at least {@code min}. */
    public static Duration atLeast(String property, Duration value, Duration min) {
        if (value == null || value.compareTo(min) < 0) {
            throw invalid(property, "must be >= " + Values.format(min) + ", was " + Values.format(value));
        }
        return value;
    }

    /**
     * The one rule for a component's {@link OutboxSchema}: not null, refused at the builder call
     * {@code schema(null)} (no builder has a use for "no schema"), with the same message everywhere.
     */
    public static OutboxSchema schema(String component, OutboxSchema schema) {
        if (schema == null) {
            throw new InvalidConfigurationException(component + ".schema must not be null: pass "
                    + "OutboxSchema.defaults() or OutboxSchema.builder()...build() (settings txoutbox.schema.*)");
        }
        return schema;
    }

    /** A PostgreSQL schema or table name from configuration ({@link Identifiers#problem}). */
    public static String identifier(String property, String value) {
        String problem = Identifiers.problem(value);
        if (problem != null) {
            throw invalid(property, problem);
        }
        return value;
    }

    /** A table name that leaves room in 63 bytes for the names derived from it with {@code suffix}. */
    public static String roomForSuffix(String property, String value, String suffix) {
        String problem = Identifiers.roomForSuffixProblem(value, suffix);
        if (problem != null) {
            throw invalid(property, problem);
        }
        return value;
    }

    /** A finite number, at least {@code min}. */
    public static double atLeast(String property, double value, double min) {
        if (!(value >= min) || Double.isInfinite(value)) {
            throw invalid(property, "must be >= " + min + ", was " + value);
        }
        return value;
    }

    /** A fraction in {@code [0, 1)}. */
    public static double fraction(String property, double value) {
        if (!(value >= 0.0 && value < 1.0)) {
            throw invalid(property, "must be in [0, 1), was " + value);
        }
        return value;
    }

    /**
     * The rules of a {@link io.txoutbox.RetryPolicy}, its values named under {@code property} ({@code "retry"} for
     * a policy on its own, {@code "relay.retry"} for the relay's, whose settings are {@code txoutbox.relay.retry.*}).
     */
    public static void retry(String property, int maxAttempts, Duration initialBackoff, Duration maxBackoff,
            double multiplier, double jitter) {
        atLeast(property + ".maxAttempts", maxAttempts, 1);
        positive(property + ".initialBackoff", initialBackoff);
        if (maxBackoff == null || maxBackoff.compareTo(initialBackoff) < 0) {
            throw invalid(property + ".maxBackoff", "must be >= " + property + ".initialBackoff ("
                    + Values.format(initialBackoff) + "), was " + Values.format(maxBackoff));
        }
        atLeast(property + ".multiplier", multiplier, 1.0);
        fraction(property + ".jitter", jitter);
    }

    /** A component's name, used in thread names, logs and metrics: 1 to 100 of {@code [A-Za-z0-9._-]}. */
    public static String name(String property, String value) {
        if (value == null || !NAME.matcher(value).matches()) {
            throw invalid(property, "must be 1 to 100 characters from [A-Za-z0-9._-], was " + quoted(value));
        }
        return value;
    }

    /**
     * A Kafka topic name: 1 to 249 of {@code [a-zA-Z0-9._-]}, and not {@code "."} or {@code ".."}, which Kafka
     * refuses ({@code org.apache.kafka.common.internals.Topic.validate}).
     */
    public static String topic(String property, String value) {
        if (value == null || !TOPIC.matcher(value).matches() || value.equals(".") || value.equals("..")) {
            throw invalid(property, quoted(value) + " is not a valid Kafka topic name: use 1 to 249 characters from"
                    + " [a-zA-Z0-9._-], other than \".\" and \"..\"");
        }
        return value;
    }

    /**
     * A consumer's name, the key of its rows in the inbox tables: 1 to 200 characters without control characters.
     * The one rule of every place that takes a consumer name as a setting; the message names the setting.
     */
    public static String consumer(String property, String value) {
        if (!isConsumer(value)) {
            throw invalid(property, consumerProblem(value));
        }
        return value;
    }

    /** {@link #consumer}'s rule for a consumer passed as a method argument: the message names no setting. */
    public static String consumerArgument(String argument, String value) {
        if (!isConsumer(value)) {
            throw new InvalidConfigurationException(argument + " " + consumerProblem(value));
        }
        return value;
    }

    private static boolean isConsumer(String value) {
        return value != null && !value.isEmpty() && value.length() <= 200
                && value.chars().noneMatch(Character::isISOControl);
    }

    private static String consumerProblem(String value) {
        return "must be 1 to 200 characters without control characters, was " + quoted(value);
    }

    private static String quoted(String value) {
        return value == null ? "null" : "'" + value + "'";
    }
}
