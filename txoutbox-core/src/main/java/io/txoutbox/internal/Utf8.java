package io.txoutbox.internal;

import java.util.Map;

/** UTF-8 sizes without encoding, and the small JSON writer for header maps. */
final class Utf8 {

    private Utf8() {
    }

    /** Bytes of the string in UTF-8 (strings were checked for unpaired surrogates before). */
    static long length(String s) {
        long n = 0;
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c < 0x80) {
                n += 1;
            } else if (c < 0x800) {
                n += 2;
            } else if (Character.isHighSurrogate(c)) {
                n += 4;
                i++;
            } else {
                n += 3;
            }
        }
        return n;
    }

    /** A JSON object of string values; names and values hold no control characters (checked before). */
    static String jsonObject(Map<String, String> map) {
        if (map.isEmpty()) {
            return "{}";
        }
        StringBuilder b = new StringBuilder(64);
        b.append('{');
        boolean first = true;
        for (Map.Entry<String, String> e : map.entrySet()) {
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
            if (c == '"' || c == '\\') {
                b.append('\\');
            }
            b.append(c);
        }
        b.append('"');
    }
}
