package io.txoutbox.internal;

import java.util.Random;

/**
 * A generator of JSON-ish documents for differential testing against PostgreSQL's {@code jsonb}: mostly valid
 * documents built from a grammar whose every choice point also has rare wrong branches (numbers of every digit and
 * exponent shape up to and past PostgreSQL numeric's limits, every escape with ASCII, non-ASCII and fullwidth
 * "hex digits", lone and paired surrogates, raw non-ASCII and control characters, nesting, JSON and non-JSON
 * whitespace), and a structural mistake in some of them. Deterministic for a seed.
 */
final class JsonDocuments {

    /** Whitespace JSON allows between tokens. */
    private static final char[] JSON_WS = {' ', '\t', '\n', '\r'};
    /** Whitespace to Java or Unicode that JSON does not allow. */
    private static final char[] OTHER_WS = {'\u00a0', '\u2028', '\u2029', '\u000b', '\u000c', '\ufeff', '\u3000',
        '\u0085', '\u1680', '\u2003', '\u0000'};
    private static final String ASCII_HEX = "0123456789abcdefABCDEF";
    /**
     * Characters {@link Character#digit(char, int)} reads as hex digits but JSON does not: decimal digits of other
     * scripts (Arabic-Indic, Extended Arabic-Indic, Devanagari, Bengali, Thai, Tibetan, Myanmar, Mongolian) and the
     * fullwidth digits and letters.
     */
    private static final String UNICODE_DIGITS = "\u0660\u0661\u0664\u0669\u06f0\u06f4\u0966\u0967\u09e6\u0e50"
            + "\u0f20\u1040\u1810";
    private static final String FULLWIDTH_HEX = "\uff10\uff11\uff14\uff19\uff21\uff26\uff41\uff46\uff43";
    private static final String NOT_HEX = "gGxX-+ \"\\";
    private static final String[] RAW_TEXT = {"a", "order", "Z9", " ", "é", "中文", "😀", "\u2028", "\u00a0",
        "\ufeff", "\u007f", "\u0085", "'", "/", "{", "]", ":", ","};
    private static final char[] SIMPLE_ESCAPES = {'"', '\\', '/', 'b', 'f', 'n', 'r', 't'};
    private static final char[] BAD_ESCAPES = {'x', 'a', 'v', '0', 'U', '\'', 'e', ' '};
    /** Exponents around PostgreSQL numeric's limits and its exponent parser's INT_MAX / 2. */
    private static final long[] EDGE_EXPONENTS = {131070, 131071, 131072, 131073, 16382, 16383, 16384,
        1073741821, 1073741822, 1073741823, 1073741824, 2147483647, 2147483648L};

    private final Random r;

    JsonDocuments(long seed) {
        this.r = new Random(seed);
    }

    String next() {
        StringBuilder b = new StringBuilder();
        int shape = r.nextInt(100);
        if (shape < 3) {
            deep(b);
        } else {
            ws(b);
            value(b, 0);
            ws(b);
        }
        if (r.nextInt(100) < 12) {
            mistake(b);
        }
        return b.toString();
    }

    // -------------------------------------------------------------------------------------------------- values

    private void value(StringBuilder b, int depth) {
        int k = r.nextInt(100);
        int containers = depth < 4 ? 40 : depth < 8 ? 15 : 0;
        if (k < containers / 2) {
            array(b, depth);
        } else if (k < containers) {
            object(b, depth);
        } else if (k < containers + (100 - containers) * 45 / 100) {
            number(b);
        } else if (k < containers + (100 - containers) * 90 / 100) {
            string(b);
        } else {
            literal(b);
        }
    }

    private void array(StringBuilder b, int depth) {
        b.append('[');
        ws(b);
        int n = r.nextInt(5);
        for (int i = 0; i < n; i++) {
            if (i > 0) {
                b.append(',');
                ws(b);
            }
            value(b, depth + 1);
            ws(b);
        }
        b.append(']');
    }

    private void object(StringBuilder b, int depth) {
        b.append('{');
        ws(b);
        int n = r.nextInt(5);
        for (int i = 0; i < n; i++) {
            if (i > 0) {
                b.append(',');
                ws(b);
            }
            if (rare(2)) {
                number(b); // a key that is not a string
            } else {
                string(b);
            }
            ws(b);
            b.append(':');
            ws(b);
            value(b, depth + 1);
            ws(b);
        }
        b.append('}');
    }

    /** Nesting near the documented depth limit (never past it: that is where the check refuses on purpose). */
    private void deep(StringBuilder b) {
        int levels = JsonSyntax.MAX_DEPTH - r.nextInt(20);
        StringBuilder close = new StringBuilder();
        for (int i = 0; i < levels; i++) {
            if (r.nextBoolean()) {
                b.append('[');
                close.append(']');
            } else {
                b.append("{\"k\":");
                close.append('}');
            }
        }
        value(b, 100);
        b.append(close.reverse());
    }

    private void literal(StringBuilder b) {
        String[] words = {"true", "false", "null"};
        String w = words[r.nextInt(3)];
        if (rare(3)) {
            switch (r.nextInt(4)) {
                case 0 -> w = w.substring(0, 1 + r.nextInt(w.length() - 1));
                case 1 -> w = w.toUpperCase();
                case 2 -> w = w + "x";
                default -> w = new String[] {"NaN", "Infinity", "undefined", "nil"}[r.nextInt(4)];
            }
        }
        b.append(w);
    }

    // ------------------------------------------------------------------------------------------------- numbers

    private void number(StringBuilder b) {
        int sign = r.nextInt(100);
        if (sign < 35) {
            b.append('-');
        } else if (sign < 37) {
            b.append(r.nextBoolean() ? "+" : "--");
        }
        boolean zeroInt = r.nextInt(100) < 40;
        int intShape = r.nextInt(1000);
        if (intShape < 8) {
            // near numeric's 131072 digits before the point
            b.append('1');
            digits(b, 131068 + r.nextInt(8), false);
        } else if (intShape < 20) {
            b.append(r.nextBoolean() ? "00" : "0" + (1 + r.nextInt(9))); // leading zeros
        } else if (intShape < 25) {
            // no integer part
        } else if (intShape < 30) {
            b.append(UNICODE_DIGITS.charAt(r.nextInt(UNICODE_DIGITS.length())));
        } else if (zeroInt) {
            b.append('0');
        } else {
            b.append((char) ('1' + r.nextInt(9)));
            digits(b, r.nextInt(r.nextBoolean() ? 4 : 25), false);
        }
        int frac = r.nextInt(1000);
        if (frac < 450) {
            // none
        } else if (frac < 458) {
            b.append('.');
            digits(b, 16380 + r.nextInt(8), r.nextBoolean());
        } else if (frac < 470) {
            b.append('.'); // a point without digits
        } else {
            b.append('.');
            digits(b, 1 + r.nextInt(r.nextBoolean() ? 3 : 30), r.nextInt(3) == 0);
        }
        int exp = r.nextInt(100);
        if (exp < 45) {
            return;
        }
        b.append(r.nextBoolean() ? 'e' : 'E');
        int s = r.nextInt(3);
        if (s == 1) {
            b.append('+');
        } else if (s == 2) {
            b.append('-');
        }
        if (rare(3)) {
            return; // an exponent without digits
        }
        if (r.nextInt(5) == 0) {
            b.append("0".repeat(1 + r.nextInt(4))); // leading zeros in the exponent
        }
        int e = r.nextInt(100);
        if (e < 50) {
            b.append(r.nextInt(r.nextBoolean() ? 10 : 400));
        } else if (e < 75) {
            long edge = EDGE_EXPONENTS[r.nextInt(EDGE_EXPONENTS.length)];
            b.append(edge + r.nextInt(5) - 2);
        } else if (e < 90) {
            b.append(1 + r.nextInt(r.nextBoolean() ? 999_999 : Integer.MAX_VALUE));
        } else {
            b.append((char) ('1' + r.nextInt(9)));
            digits(b, 9 + r.nextInt(20), false); // past every integer type
        }
    }

    /** {@code n} random ASCII digits; {@code zeros}: only zeros, or zeros at the end. */
    private void digits(StringBuilder b, int n, boolean zeros) {
        boolean allZero = zeros && r.nextBoolean();
        for (int i = 0; i < n; i++) {
            if (allZero || (zeros && i > n / 2)) {
                b.append('0');
            } else {
                b.append((char) ('0' + r.nextInt(10)));
            }
        }
    }

    // ------------------------------------------------------------------------------------------------- strings

    private void string(StringBuilder b) {
        b.append(rare(1) ? '\'' : '"');
        int parts = r.nextInt(6);
        for (int i = 0; i < parts; i++) {
            int k = r.nextInt(100);
            if (k < 40) {
                b.append(RAW_TEXT[r.nextInt(RAW_TEXT.length)]);
            } else if (k < 55) {
                b.append('\\').append(SIMPLE_ESCAPES[r.nextInt(SIMPLE_ESCAPES.length)]);
            } else if (k < 90) {
                unicodeEscape(b);
            } else if (k < 93) {
                b.append((char) r.nextInt(0x20)); // a raw control character
            } else if (k < 95) {
                b.append(r.nextBoolean() ? '\ud83d' : '\ude00'); // a raw lone surrogate
            } else if (k < 97) {
                b.append('\\').append(BAD_ESCAPES[r.nextInt(BAD_ESCAPES.length)]);
            } else {
                b.append('\\'); // escapes the closing quote, or what follows
            }
        }
        if (!rare(1)) {
            b.append('"');
        }
    }

    private void unicodeEscape(StringBuilder b) {
        int k = r.nextInt(100);
        if (k < 12) {
            // a surrogate pair, a lone high or low one, or a high one followed by something else
            String high = hex4(0xd800 + r.nextInt(0x400));
            String low = hex4(0xdc00 + r.nextInt(0x400));
            switch (r.nextInt(5)) {
                case 0, 1 -> b.append("\\u").append(high).append("\\u").append(low);
                case 2 -> b.append("\\u").append(high);
                case 3 -> b.append("\\u").append(low);
                default -> b.append("\\u").append(high).append(r.nextBoolean() ? "\\u0041" : "\\n");
            }
            return;
        }
        if (k < 16) {
            b.append("\\u").append(r.nextBoolean() ? "0000" : hex4(r.nextInt(0x20)));
            return;
        }
        if (k < 20) {
            b.append(r.nextBoolean() ? "\\U0041" : "\\u" + hex4(r.nextInt(0x10000)).substring(0, r.nextInt(4)));
            return;
        }
        // four "hex digits", each from ASCII (either case), other scripts' digits, fullwidth forms or no hex at all
        b.append("\\u");
        String plain = hex4(r.nextInt(0xd800));
        for (int d = 0; d < 4; d++) {
            int c = r.nextInt(100);
            if (c < 80) {
                char h = plain.charAt(d);
                b.append(r.nextBoolean() ? Character.toUpperCase(h) : h);
            } else if (c < 90) {
                b.append(UNICODE_DIGITS.charAt(r.nextInt(UNICODE_DIGITS.length())));
            } else if (c < 98) {
                b.append(FULLWIDTH_HEX.charAt(r.nextInt(FULLWIDTH_HEX.length())));
            } else {
                b.append(NOT_HEX.charAt(r.nextInt(NOT_HEX.length())));
            }
        }
    }

    private String hex4(int v) {
        StringBuilder h = new StringBuilder(4);
        for (int shift = 12; shift >= 0; shift -= 4) {
            h.append(ASCII_HEX.charAt((v >> shift) & 0xf));
        }
        return h.toString();
    }

    // ---------------------------------------------------------------------------------------- whitespace, errors

    private void ws(StringBuilder b) {
        int k = r.nextInt(1000);
        if (k < 550) {
            return;
        }
        if (k < 985) {
            int n = 1 + r.nextInt(3);
            for (int i = 0; i < n; i++) {
                b.append(JSON_WS[r.nextInt(JSON_WS.length)]);
            }
        } else {
            b.append(OTHER_WS[r.nextInt(OTHER_WS.length)]);
        }
    }

    /** A structural mistake somewhere in the document. */
    private void mistake(StringBuilder b) {
        int pos = b.length() == 0 ? 0 : r.nextInt(b.length() + 1);
        switch (r.nextInt(10)) {
            case 0 -> b.insert(pos, ',');
            case 1 -> b.insert(pos, ':');
            case 2 -> b.insert(pos, r.nextBoolean() ? '[' : '{');
            case 3 -> b.insert(pos, r.nextBoolean() ? ']' : '}');
            case 4 -> b.setLength(pos); // truncated
            case 5 -> {
                if (pos < b.length()) {
                    b.deleteCharAt(pos);
                }
            }
            case 6 -> b.append(r.nextBoolean() ? " 1" : "{}");
            case 7 -> {
                int at = b.lastIndexOf("]");
                if (at > 0) {
                    b.insert(at, ','); // trailing comma in an array
                }
            }
            case 8 -> {
                int at = b.indexOf(",");
                if (at >= 0) {
                    b.deleteCharAt(at); // missing comma
                }
            }
            default -> {
                int at = b.indexOf("\"");
                if (at >= 0) {
                    b.setCharAt(at, '\''); // single quotes
                }
            }
        }
    }

    /** One in a hundred times {@code n}. */
    private boolean rare(int n) {
        return r.nextInt(100) < n;
    }
}
