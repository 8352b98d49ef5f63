package io.txoutbox.internal.progress;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Reads the {@code headers} column (a flat jsonb object, as PostgreSQL prints it) into a map of strings. Non-string
 * values written by other writers are kept as their JSON text.
 */
final class HeadersJson {

    private final String s;
    private int i;

    private HeadersJson(String s) {
        this.s = s;
    }

    static Map<String, String> parse(String json) {
        if (json == null || json.equals("{}")) {
            return Map.of();
        }
        return new HeadersJson(json).object();
    }

    private Map<String, String> object() {
        Map<String, String> map = new LinkedHashMap<>();
        ws();
        expect('{');
        ws();
        if (peek() == '}') {
            return map;
        }
        while (true) {
            ws();
            String name = string();
            ws();
            expect(':');
            ws();
            String value = peek() == '"' ? string() : raw();
            map.put(name, value);
            ws();
            char c = s.charAt(i++);
            if (c == '}') {
                return map;
            }
            if (c != ',') {
                throw new IllegalArgumentException("headers are not a flat JSON object at character " + (i - 1));
            }
        }
    }

    /** A nested value or scalar, kept as text: scan to the matching end, respecting strings. */
    private String raw() {
        int start = i;
        int depth = 0;
        while (i < s.length()) {
            char c = s.charAt(i);
            if (c == '"') {
                string();
                continue;
            }
            if (c == '{' || c == '[') {
                depth++;
            } else if (c == '}' || c == ']') {
                if (depth == 0) {
                    break;
                }
                depth--;
            } else if (c == ',' && depth == 0) {
                break;
            }
            i++;
        }
        return s.substring(start, i).trim();
    }

    private String string() {
        expect('"');
        StringBuilder b = new StringBuilder();
        while (true) {
            char c = s.charAt(i++);
            if (c == '"') {
                return b.toString();
            }
            if (c != '\\') {
                b.append(c);
                continue;
            }
            char e = s.charAt(i++);
            switch (e) {
                case 'b' -> b.append('\b');
                case 'f' -> b.append('\f');
                case 'n' -> b.append('\n');
                case 'r' -> b.append('\r');
                case 't' -> b.append('\t');
                case 'u' -> {
                    b.append((char) Integer.parseInt(s.substring(i, i + 4), 16));
                    i += 4;
                }
                default -> b.append(e);
            }
        }
    }

    private char peek() {
        return s.charAt(i);
    }

    private void expect(char c) {
        if (s.charAt(i) != c) {
            throw new IllegalArgumentException("expected '" + c + "' at character " + i + " of the headers");
        }
        i++;
    }

    private void ws() {
        while (i < s.length() && Character.isWhitespace(s.charAt(i))) {
            i++;
        }
    }
}
