package io.txoutbox.internal;

/**
 * A strict JSON (RFC 8259) syntax check that also rejects what PostgreSQL's {@code jsonb} input refuses although JSON
 * allows it: the escape {@code \u0000}, unpaired surrogate escapes, and numbers that overflow
 * {@code numeric} (also a zero with an exponent of 1073741823 or more). Hex digits, whitespace and number digits are
 * ASCII only, as in JSON. Agreement with {@code jsonb} is proven by a differential fuzz test
 * ({@code JsonSyntaxFuzzIT}). Iterative, so deep nesting cannot overflow the stack; nesting deeper than {@link #MAX_DEPTH} is
 * refused. Returns a description of the first problem, or {@code null} when the text is fine.
 */
public final class JsonSyntax {

    public static final int MAX_DEPTH = 1000;
    /** PostgreSQL's numeric limits; beyond them jsonb input fails with "value overflows numeric format". */
    static final int MAX_NUMERIC_INTEGER_DIGITS = 131072;
    static final int MAX_NUMERIC_SCALE = 16383;
    /** PostgreSQL 15's numeric input refuses exponents of this magnitude or more (INT_MAX / 2), whatever the digits. */
    static final long MAX_NUMERIC_EXPONENT = Integer.MAX_VALUE / 2;

    private final String s;
    private int i;

    private JsonSyntax(String s) {
        this.s = s;
    }

    public static String problem(String json) {
        try {
            new JsonSyntax(json).document();
            return null;
        } catch (Problem p) {
            return p.getMessage();
        }
    }

    private static final class Problem extends RuntimeException {
        private static final long serialVersionUID = 1L;

        Problem(String message) {
            super(message, null, false, false);
        }
    }

    private Problem fail(String what) {
        return new Problem(what + " at character " + i);
    }

    private void document() {
        // containers: 'o' = object, 'a' = array; a stack kept as chars
        char[] stack = new char[16];
        int depth = 0;
        skipWs();
        boolean expectValue = true;
        while (true) {
            if (expectValue) {
                if (i >= s.length()) {
                    throw fail("unexpected end of input, a value was expected");
                }
                char c = s.charAt(i);
                if (c == '{' || c == '[') {
                    if (depth == MAX_DEPTH) {
                        throw fail("nesting deeper than " + MAX_DEPTH + " levels");
                    }
                    if (depth == stack.length) {
                        stack = java.util.Arrays.copyOf(stack, depth * 2);
                    }
                    stack[depth++] = c == '{' ? 'o' : 'a';
                    i++;
                    skipWs();
                    if (i < s.length() && s.charAt(i) == (c == '{' ? '}' : ']')) {
                        i++;
                        depth--;
                        expectValue = false;
                    } else if (c == '{') {
                        member();
                    }
                    continue;
                }
                scalar();
                expectValue = false;
            }
            skipWs();
            if (depth == 0) {
                if (i != s.length()) {
                    throw fail("unexpected '" + s.charAt(i) + "' after the end of the JSON value");
                }
                return;
            }
            if (i >= s.length()) {
                throw fail("unexpected end of input, '" + (stack[depth - 1] == 'o' ? '}' : ']') + "' expected");
            }
            char c = s.charAt(i);
            char open = stack[depth - 1];
            if (c == ',') {
                i++;
                skipWs();
                if (open == 'o') {
                    member();
                }
                expectValue = true;
            } else if ((open == 'o' && c == '}') || (open == 'a' && c == ']')) {
                i++;
                depth--;
            } else {
                throw fail("unexpected '" + c + "', expected ',' or '" + (open == 'o' ? '}' : ']') + "'");
            }
        }
    }

    /** A member name and its colon; the value follows. */
    private void member() {
        if (i >= s.length() || s.charAt(i) != '"') {
            throw fail("an object member name in double quotes expected");
        }
        string();
        skipWs();
        if (i >= s.length() || s.charAt(i) != ':') {
            throw fail("':' expected after an object member name");
        }
        i++;
        skipWs();
    }

    private void scalar() {
        char c = s.charAt(i);
        switch (c) {
            case '"' -> string();
            case 't' -> literal("true");
            case 'f' -> literal("false");
            case 'n' -> literal("null");
            default -> {
                if (c == '-' || (c >= '0' && c <= '9')) {
                    number();
                } else {
                    throw fail("unexpected '" + c + "', a value was expected");
                }
            }
        }
    }

    private void literal(String word) {
        if (!s.startsWith(word, i)) {
            throw fail("invalid literal, '" + word + "' expected");
        }
        i += word.length();
    }

    private void number() {
        if (s.charAt(i) == '-') {
            i++;
        }
        if (i >= s.length()) {
            throw fail("digit expected");
        }
        int intDigits = 0; // significant digits before the point (JSON forbids leading zeros)
        boolean zero = true;
        if (s.charAt(i) == '0') {
            i++;
        } else if (isDigit()) {
            zero = false;
            while (isDigit()) {
                i++;
                intDigits++;
            }
        } else {
            throw fail("digit expected");
        }
        int fracDigits = 0;
        int leadingFracZeros = 0;
        if (i < s.length() && s.charAt(i) == '.') {
            i++;
            if (!isDigit()) {
                throw fail("digit expected after the decimal point");
            }
            while (isDigit()) {
                if (s.charAt(i) != '0') {
                    zero = false;
                } else if (zero) {
                    leadingFracZeros++;
                }
                fracDigits++;
                i++;
            }
        }
        long exp = 0;
        if (i < s.length() && (s.charAt(i) == 'e' || s.charAt(i) == 'E')) {
            i++;
            boolean negative = false;
            if (i < s.length() && (s.charAt(i) == '+' || s.charAt(i) == '-')) {
                negative = s.charAt(i) == '-';
                i++;
            }
            if (!isDigit()) {
                throw fail("digit expected in the exponent");
            }
            while (isDigit()) {
                exp = Math.min(exp * 10 + (s.charAt(i) - '0'), Integer.MAX_VALUE);
                i++;
            }
            exp = negative ? -exp : exp;
        }
        // PostgreSQL 15's numeric input refuses an exponent of INT_MAX / 2 or more either way before it looks at the
        // digits, so even 0e1073741823 "overflows numeric format". 16 and later refuse only more than INT_MAX / 2:
        // the check keeps 15's rule on every version (it runs when a message is built, before any server is known),
        // so it refuses a zero with the exponent exactly 1073741823 that 16+ would store.
        if (exp >= MAX_NUMERIC_EXPONENT || exp <= -MAX_NUMERIC_EXPONENT) {
            throw fail("exponent out of PostgreSQL numeric's range (its magnitude must be below "
                    + MAX_NUMERIC_EXPONENT + ")");
        }
        // PostgreSQL's numeric holds at most 131072 digits before the point and 16383 after it.
        long magnitude = intDigits > 0 ? intDigits : -leadingFracZeros;
        if (!zero && magnitude + exp > MAX_NUMERIC_INTEGER_DIGITS) {
            throw fail("number too large for PostgreSQL numeric (more than " + MAX_NUMERIC_INTEGER_DIGITS
                    + " digits before the point)");
        }
        if (fracDigits - exp > MAX_NUMERIC_SCALE) {
            throw fail("number too precise for PostgreSQL numeric (more than " + MAX_NUMERIC_SCALE
                    + " digits after the point)");
        }
    }

    private boolean isDigit() {
        return i < s.length() && s.charAt(i) >= '0' && s.charAt(i) <= '9';
    }

    private void string() {
        i++; // opening quote
        while (true) {
            if (i >= s.length()) {
                throw fail("unterminated string");
            }
            char c = s.charAt(i);
            if (c == '"') {
                i++;
                return;
            }
            if (c < 0x20) {
                throw fail(String.format("unescaped control character U+%04X in a string", (int) c));
            }
            if (c == '\\') {
                i++;
                if (i >= s.length()) {
                    throw fail("unterminated escape");
                }
                char e = s.charAt(i);
                switch (e) {
                    case '"', '\\', '/', 'b', 'f', 'n', 'r', 't' -> i++;
                    case 'u' -> unicodeEscape();
                    default -> throw fail("invalid escape '\\" + e + "'");
                }
                continue;
            }
            if (Character.isHighSurrogate(c)) {
                if (i + 1 < s.length() && Character.isLowSurrogate(s.charAt(i + 1))) {
                    i += 2;
                    continue;
                }
                throw fail("unpaired UTF-16 surrogate");
            }
            if (Character.isLowSurrogate(c)) {
                throw fail("unpaired UTF-16 surrogate");
            }
            i++;
        }
    }

    private void unicodeEscape() {
        int cp = hex4();
        if (cp == 0) {
            throw fail("the escape \\u0000 is not accepted by PostgreSQL jsonb");
        }
        if (Character.isHighSurrogate((char) cp)) {
            if (i + 1 < s.length() && s.charAt(i) == '\\' && s.charAt(i + 1) == 'u') {
                i++;
                int low = hex4();
                if (!Character.isLowSurrogate((char) low)) {
                    throw fail("a high surrogate escape must be followed by a low surrogate escape");
                }
                return;
            }
            throw fail("a high surrogate escape must be followed by a low surrogate escape");
        }
        if (Character.isLowSurrogate((char) cp)) {
            throw fail("a low surrogate escape must follow a high surrogate escape");
        }
    }

    /** Reads "uXXXX" (i at the 'u') and returns the code unit. */
    private int hex4() {
        i++; // the 'u'
        if (i + 4 > s.length()) {
            throw fail("incomplete \\u escape");
        }
        int v = 0;
        for (int k = 0; k < 4; k++) {
            int d = hexValue(s.charAt(i + k));
            if (d < 0) {
                throw fail("invalid hex digit in \\u escape (only 0-9, a-f and A-F)");
            }
            v = v * 16 + d;
        }
        i += 4;
        return v;
    }

    /**
     * The value of an ASCII hex digit, or -1. Not {@link Character#digit(char, int)}: it also reads the decimal digits
     * of other scripts and the fullwidth forms, which JSON and jsonb refuse.
     */
    private static int hexValue(char c) {
        if (c >= '0' && c <= '9') {
            return c - '0';
        }
        if (c >= 'a' && c <= 'f') {
            return c - 'a' + 10;
        }
        if (c >= 'A' && c <= 'F') {
            return c - 'A' + 10;
        }
        return -1;
    }

    private void skipWs() {
        while (i < s.length()) {
            char c = s.charAt(i);
            if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
                i++;
            } else {
                return;
            }
        }
    }
}
