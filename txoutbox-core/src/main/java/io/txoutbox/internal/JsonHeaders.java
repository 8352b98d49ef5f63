package io.txoutbox.internal;

import java.util.Map;

/**
 * Writes a header map as a JSON object of strings acceptable to {@code jsonb} (NUL becomes U+FFFD): the outbox
 * writer's validated headers and the inbox's headers from foreign producers alike.
 */
public final class JsonHeaders {

    private JsonHeaders() {
    }

    public static String write(Map<String, String> headers) {
        if (headers == null || headers.isEmpty()) {
            return "{}";
        }
        StringBuilder b = new StringBuilder(64);
        b.append('{');
        boolean first = true;
        for (Map.Entry<String, String> e : headers.entrySet()) {
            if (e.getKey() == null || e.getValue() == null) {
                continue;
            }
            if (!first) {
                b.append(',');
            }
            first = false;
            string(b, e.getKey());
            b.append(':');
            string(b, e.getValue());
        }
        return b.append('}').toString();
    }

    private static void string(StringBuilder b, String s) {
        b.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"' -> b.append("\\\"");
                case '\\' -> b.append("\\\\");
                case '\n' -> b.append("\\n");
                case '\r' -> b.append("\\r");
                case '\t' -> b.append("\\t");
                case 0 -> b.append('\uFFFD'); // jsonb refuses \u0000
                default -> {
                    if (c < 0x20) {
                        b.append(String.format("\\u%04x", (int) c));
                    } else if (Character.isSurrogate(c)
                            && !(Character.isHighSurrogate(c) && i + 1 < s.length()
                                    && Character.isLowSurrogate(s.charAt(i + 1)))
                            && !(Character.isLowSurrogate(c) && i > 0 && Character.isHighSurrogate(s.charAt(i - 1)))) {
                        b.append('\uFFFD'); // an unpaired surrogate is not valid UTF-8
                    } else {
                        b.append(c);
                    }
                }
            }
        }
        b.append('"');
    }
}
