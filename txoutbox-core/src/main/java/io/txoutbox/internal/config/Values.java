package io.txoutbox.internal.config;

import java.time.Duration;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Text forms of setting values, one way for properties, environment variables, command lines and the docs, and the
 * same as Spring Boot's (which the starter binds through): durations as {@code 500ms}, {@code 5s}, {@code 2m},
 * {@code 1h}, {@code 7d}, also {@code ns} and {@code us} (Spring Boot's simple style), or ISO-8601 {@code PT5S}; a
 * bare number is milliseconds; never negative, since no setting takes a negative duration. Byte sizes as whole
 * numbers, bare (bytes) or with {@code B}, {@code KB}, {@code MB}, {@code GB} in any case, powers of 1024 (Spring
 * Boot's {@code DataSize}): {@code 16M}, {@code 16MiB} and fractions ({@code 1.5GB}) are refused, so that one text
 * never means two sizes. Enums by name in any case with {@code -} or {@code _}.
 */
public final class Values {

    private static final Pattern DURATION = Pattern.compile("(-?\\d+)\\s*(ns|us|ms|s|m|h|d)?");
    private static final String DURATION_FORMS = "use e.g. 500ms, 5s, 2m, 1h, 7d (also ns, us) or PT5S";
    private static final String SIZE_FORMS = "use a whole number, bare (bytes) or with B, KB, MB or GB (powers of "
            + "1024), e.g. 1048576, 512KB, 16MB or 1GB";
    private static final Pattern SIZE = Pattern.compile("(\\d+)\\s*(B|KB|MB|GB)?");

    private Values() {
    }

    /** {@code relay.batchSize} → {@code relay.batch-size}; {@code inboxWorker.x} → {@code inbox-worker.x}. */
    public static String kebab(String camel) {
        StringBuilder b = new StringBuilder(camel.length() + 8);
        for (int i = 0; i < camel.length(); i++) {
            char c = camel.charAt(i);
            if (Character.isUpperCase(c)) {
                if (i > 0 && camel.charAt(i - 1) != '.') {
                    b.append('-');
                }
                b.append(Character.toLowerCase(c));
            } else {
                b.append(c);
            }
        }
        return b.toString();
    }

    /** A duration in one of the forms above; a negative one is refused here, with the accepted forms. */
    public static Duration parseDuration(String text) {
        String t = text.trim();
        Duration d;
        if (t.startsWith("P") || t.startsWith("p") || t.startsWith("-P") || t.startsWith("-p")) {
            d = Duration.parse(t);
        } else {
            Matcher m = DURATION.matcher(t.toLowerCase(Locale.ROOT));
            if (!m.matches()) {
                throw new IllegalArgumentException("not a duration: " + DURATION_FORMS);
            }
            long n = Long.parseLong(m.group(1));
            String unit = m.group(2) == null ? "ms" : m.group(2);
            d = switch (unit) {
                case "ns" -> Duration.ofNanos(n);
                case "us" -> Duration.ofNanos(Math.multiplyExact(n, 1000L));
                case "ms" -> Duration.ofMillis(n);
                case "s" -> Duration.ofSeconds(n);
                case "m" -> Duration.ofMinutes(n);
                case "h" -> Duration.ofHours(n);
                default -> Duration.ofDays(n);
            };
        }
        if (d.isNegative()) {
            throw new IllegalArgumentException("a negative duration: no setting takes one; " + DURATION_FORMS);
        }
        return d;
    }

    /** A size in bytes in one of the forms above; fractions and other units are refused, with the accepted forms. */
    public static long parseBytes(String text) {
        String t = text.trim().toUpperCase(Locale.ROOT);
        Matcher m = SIZE.matcher(t);
        if (!m.matches()) {
            String why = t.matches("-.*") ? "a negative size" : t.matches("\\d*[.,]\\d.*")
                    ? "a fraction (write 1536MB, not 1.5GB)" : "not a size in bytes";
            throw new IllegalArgumentException(why + ": " + SIZE_FORMS + "; not 16M or 16MiB");
        }
        long n = Long.parseLong(m.group(1));
        String unit = m.group(2) == null ? "B" : m.group(2);
        return switch (unit) {
            case "KB" -> Math.multiplyExact(n, 1024L);
            case "MB" -> Math.multiplyExact(n, 1024L * 1024);
            case "GB" -> Math.multiplyExact(n, 1024L * 1024 * 1024);
            default -> n;
        };
    }

    public static boolean parseBoolean(String text) {
        String t = text.trim().toLowerCase(Locale.ROOT);
        if (t.equals("true")) {
            return true;
        }
        if (t.equals("false")) {
            return false;
        }
        throw new IllegalArgumentException("not a boolean: use true or false");
    }

    public static <E extends Enum<E>> E parseEnum(Class<E> type, String text) {
        String t = text.trim().replace('-', '_').toUpperCase(Locale.ROOT);
        for (E e : type.getEnumConstants()) {
            if (e.name().equals(t)) {
                return e;
            }
        }
        StringBuilder names = new StringBuilder();
        for (E e : type.getEnumConstants()) {
            names.append(names.length() == 0 ? "" : ", ").append(e.name());
        }
        throw new IllegalArgumentException("not one of " + names);
    }

    /** The shortest exact form: {@code 500ms}, {@code 5s}, {@code 2m}, {@code 7d}; {@code null} as "null". */
    public static String format(Duration d) {
        if (d == null) {
            return "null";
        }
        if (d.isZero()) {
            return "0ms";
        }
        if (d.getNano() % 1_000_000 != 0) {
            return d.toString();
        }
        long ms = d.toMillis();
        if (ms % 86_400_000L == 0) {
            return ms / 86_400_000L + "d";
        }
        if (ms % 3_600_000L == 0) {
            return ms / 3_600_000L + "h";
        }
        if (ms % 60_000L == 0) {
            return ms / 60_000L + "m";
        }
        if (ms % 1000L == 0) {
            return ms / 1000L + "s";
        }
        return ms + "ms";
    }

    /** {@code 16MB}, {@code 512KB}, or bytes. */
    public static String formatBytes(long bytes) {
        if (bytes != 0 && bytes % (1024L * 1024 * 1024) == 0) {
            return bytes / (1024L * 1024 * 1024) + "GB";
        }
        if (bytes != 0 && bytes % (1024L * 1024) == 0) {
            return bytes / (1024L * 1024) + "MB";
        }
        if (bytes != 0 && bytes % 1024L == 0) {
            return bytes / 1024L + "KB";
        }
        return Long.toString(bytes);
    }

    /** A value in its text form: durations and sizes ({@code unit} {@code "bytes"}) as above, enums by name. */
    public static String text(Object v, String unit) {
        if (v instanceof Duration d) {
            return format(d);
        }
        if (v instanceof Number n && (v instanceof Long || v instanceof Integer) && "bytes".equals(unit)) {
            return formatBytes(n.longValue());
        }
        if (v instanceof Enum<?> e) {
            return e.name();
        }
        return String.valueOf(v);
    }
}
