package io.txoutbox.internal;

import io.txoutbox.InvalidMessageException;
import io.txoutbox.Payload;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.regex.Pattern;

/**
 * The checks a message passes before it may be written. Everything PostgreSQL or Kafka would reject is rejected here,
 * in the client, because an error from PostgreSQL would abort the caller's whole transaction.
 */
public final class MessageRules {

    /** Kafka's topic alphabet and length. */
    private static final Pattern TOPIC = Pattern.compile("[a-zA-Z0-9._-]{1,249}");
    public static final int MAX_NAME_LENGTH = 255;
    public static final int MAX_ID_LENGTH = 1024;

    /**
     * Header names the Kafka transport writes itself; a user header with one of these names would be ambiguous.
     */
    public static final Set<String> RESERVED_HEADERS =
            Set.of("event_id", "event_type", "aggregate_type", "aggregate_id", "aggregate_version");
    public static final String RESERVED_HEADER_PREFIX = "txoutbox";
    /**
     * The outbox table's CHECK constraints (schema version 7) that refuse these names from plain-SQL writers, one per
     * name so that PostgreSQL's error, which names the constraint, names the header (a key lookup each), and one for
     * the names in another case and the prefix (a regular expression over the keys).
     */
    public static final List<String> RESERVED_HEADER_CONSTRAINTS = List.of("header_event_id_is_reserved",
            "header_event_type_is_reserved", "header_aggregate_type_is_reserved", "header_aggregate_id_is_reserved",
            "header_aggregate_version_is_reserved", "header_txoutbox_or_other_case_is_reserved");

    private MessageRules() {
    }

    /** Kafka's rule for a topic name: 1 to 249 characters of {@code [a-zA-Z0-9._-]}, not "." or "..". */
    public static boolean isValidTopic(String topic) {
        return topic != null && TOPIC.matcher(topic).matches() && !topic.equals(".") && !topic.equals("..");
    }

    public static void check(UUID eventId, String topic, String key, String aggregateType, String aggregateId,
            Long aggregateVersion, String eventType, Payload payload, Map<String, String> headers) {
        String ctx = " (event " + eventId + ")";
        if (topic == null || topic.isBlank()) {
            throw invalid("topic is missing" + ctx + ": set it with .topic(\"orders\")");
        }
        if (!isValidTopic(topic)) {
            throw invalid("topic '" + printable(topic) + "' is not a valid Kafka topic name" + ctx
                    + ": use 1 to 249 characters from [a-zA-Z0-9._-], and not '.' or '..'");
        }
        requireText("aggregateType", aggregateType, MAX_NAME_LENGTH, ctx, ".aggregate(\"Order\", orderId)");
        requireText("aggregateId", aggregateId, MAX_ID_LENGTH, ctx, ".aggregate(\"Order\", orderId)");
        requireText("eventType", eventType, MAX_NAME_LENGTH, ctx, ".eventType(\"OrderCreated\")");
        if (key != null) {
            checkText("key", key, MAX_ID_LENGTH, ctx);
        }
        if (aggregateVersion != null && aggregateVersion < 0) {
            throw invalid("aggregateVersion must be >= 0, was " + aggregateVersion + ctx);
        }
        for (Map.Entry<String, String> h : headers.entrySet()) {
            String name = h.getKey();
            if (name == null || name.isEmpty()) {
                throw invalid("header name must not be empty" + ctx);
            }
            checkText("header name '" + printable(name) + "'", name, MAX_NAME_LENGTH, ctx);
            String lower = name.toLowerCase(Locale.ROOT);
            if (RESERVED_HEADERS.contains(lower) || lower.startsWith(RESERVED_HEADER_PREFIX)) {
                throw invalid("header name '" + name + "' is reserved" + ctx + ": txoutbox writes "
                        + RESERVED_HEADERS + " and 'txoutbox*' headers itself; pick another name");
            }
            if (h.getValue() == null) {
                throw invalid("header '" + name + "' has a null value" + ctx + ": leave the header out instead");
            }
            checkText("header '" + name + "' value", h.getValue(), Integer.MAX_VALUE, ctx);
        }
        if (payload instanceof Payload.Json json) {
            String problem = JsonSyntax.problem(json.text());
            if (problem != null) {
                throw invalid("payload is not valid JSON" + ctx + ": " + problem
                        + "; pass well-formed JSON, or bytes with .bytesPayload(...)");
            }
        }
    }

    private static void requireText(String field, String value, int max, String ctx, String hint) {
        if (value == null || value.isBlank()) {
            throw invalid(field + " is missing" + ctx + ": set it with " + hint);
        }
        checkText(field, value, max, ctx);
    }

    /** Control characters (including NUL, which PostgreSQL text cannot hold) and broken UTF-16 are rejected. */
    static void checkText(String field, String value, int max, String ctx) {
        if (value.length() > max) {
            throw invalid(field + " is " + value.length() + " characters long" + ctx + "; the limit is " + max);
        }
        for (int i = 0; i < value.length(); i++) {
            char c = value.charAt(i);
            if (Character.isISOControl(c)) {
                throw invalid(field + " contains the control character U+" + String.format("%04X", (int) c)
                        + " at index " + i + ctx + "; remove or encode it");
            }
            if (Character.isHighSurrogate(c)) {
                if (i + 1 < value.length() && Character.isLowSurrogate(value.charAt(i + 1))) {
                    i++;
                    continue;
                }
                throw invalid(field + " contains an unpaired UTF-16 surrogate at index " + i + ctx);
            }
            if (Character.isLowSurrogate(c)) {
                throw invalid(field + " contains an unpaired UTF-16 surrogate at index " + i + ctx);
            }
        }
    }

    static InvalidMessageException invalid(String message) {
        return new InvalidMessageException(message);
    }

    /** For error messages: the value with control characters escaped and cut to a readable length. */
    public static String printable(String s) {
        StringBuilder b = new StringBuilder();
        for (int i = 0; i < s.length() && b.length() < 80; i++) {
            char c = s.charAt(i);
            if (Character.isISOControl(c)) {
                b.append(String.format("\\u%04x", (int) c));
            } else {
                b.append(c);
            }
        }
        if (b.length() >= 80) {
            b.append("…");
        }
        return b.toString();
    }
}
