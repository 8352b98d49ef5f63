package io.txoutbox.internal.inbox;

import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.CharBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.Collections;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * How the inbox keeps keys and header values that are bytes, not necessarily text (Schema Registry keys start with a
 * 0x00 magic byte; foreign producers send any bytes), in {@code text}/{@code jsonb} columns without losing anything.
 * <ul>
 *   <li>The <b>text form</b> of bytes ({@link #textForm}): the bytes decoded as UTF-8 when they are valid UTF-8 and
 *   contain no NUL (PostgreSQL's text cannot hold NUL), else {@code \x} followed by the bytes in lowercase hex. It is
 *   what {@code InboxEvent.key()}, {@code headers()}, {@code event_type} and {@code aggregate_*} hold.</li>
 *   <li>The <b>group form</b> of a key ({@link #groupForm}), stored in {@code partition_key} (per-key order and the
 *   shard): the text form, except that a text key that itself starts with {@code \x} is hex-encoded too. So a
 *   {@code partition_key} starting with {@code \x} is always hex, and two different keys never share a group.</li>
 *   <li>The exact bytes: {@code key_bytes} for the key (every row written since schema V6), {@code header_bytes} for
 *   the headers only when some header is not text ({@link #needsHeaderBytes}); NULL means the {@code headers}
 *   column holds them exactly.</li>
 * </ul>
 */
public final class InboxBytes {

    static final String HEX_PREFIX = "\\x";
    private static final byte HEADER_FORMAT = 1;

    private InboxBytes() {
    }

    /** True when the bytes are valid UTF-8 without NUL, i.e. a PostgreSQL text value holds them exactly. */
    public static boolean isText(byte[] bytes) {
        return decode(bytes) != null;
    }

    /** The bytes as text when they are text ({@link #isText}), else {@code \x<hex>}; null for null. */
    public static String textForm(byte[] bytes) {
        if (bytes == null) {
            return null;
        }
        String text = decode(bytes);
        return text != null ? text : hex(bytes);
    }

    /** The key's {@code partition_key}: its text form, hex-encoded also when the text starts with {@code \x}. */
    public static String groupForm(byte[] key) {
        if (key == null) {
            return null;
        }
        String text = decode(key);
        return text != null && !text.startsWith(HEX_PREFIX) ? text : hex(key);
    }

    /** A string safe for a text column: itself, or the text form of its UTF-8 bytes when it has a NUL or a lone surrogate. */
    public static String safeText(String s) {
        if (s == null) {
            return null;
        }
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c == 0 || Character.isSurrogate(c)) {
                return textForm(s.getBytes(StandardCharsets.UTF_8));
            }
        }
        return s;
    }

    /** The UTF-8 bytes of a string; null for null. */
    public static byte[] utf8(String s) {
        return s == null ? null : s.getBytes(StandardCharsets.UTF_8);
    }

    /** The text form of each header value (null values become empty text, as before V6). */
    public static Map<String, String> textHeaders(Map<String, byte[]> headerBytes) {
        if (headerBytes == null || headerBytes.isEmpty()) {
            return Map.of();
        }
        Map<String, String> out = new LinkedHashMap<>();
        headerBytes.forEach((k, v) -> out.put(k, v == null ? "" : textForm(v)));
        return Collections.unmodifiableMap(out);
    }

    /** Each header value's UTF-8 bytes. */
    public static Map<String, byte[]> bytesOf(Map<String, String> headers) {
        if (headers == null || headers.isEmpty()) {
            return Map.of();
        }
        Map<String, byte[]> out = new LinkedHashMap<>();
        headers.forEach((k, v) -> out.put(k, utf8(v)));
        return Collections.unmodifiableMap(out);
    }

    /**
     * True when the {@code headers} jsonb (names and text forms) would not give the header bytes back exactly: a
     * value that is not text, a null value, or a name with NUL or a lone surrogate (jsonb refuses both).
     */
    public static boolean needsHeaderBytes(Map<String, byte[]> headerBytes) {
        if (headerBytes == null) {
            return false;
        }
        for (Map.Entry<String, byte[]> e : headerBytes.entrySet()) {
            if (e.getValue() == null || !isText(e.getValue()) || !safeText(e.getKey()).equals(e.getKey())) {
                return true;
            }
        }
        return false;
    }

    /**
     * {@code header_bytes}: format byte 1, then per header the name's UTF-8 length (int) and bytes and the value's
     * length (int, -1 for null) and bytes. Names are Java strings (Kafka decodes them), kept as their UTF-8.
     */
    public static byte[] encodeHeaders(Map<String, byte[]> headerBytes) {
        ByteArrayOutputStream out = new ByteArrayOutputStream(64);
        out.write(HEADER_FORMAT);
        for (Map.Entry<String, byte[]> e : headerBytes.entrySet()) {
            byte[] name = e.getKey().getBytes(StandardCharsets.UTF_8);
            writeInt(out, name.length);
            out.writeBytes(name);
            byte[] v = e.getValue();
            writeInt(out, v == null ? -1 : v.length);
            if (v != null) {
                out.writeBytes(v);
            }
        }
        return out.toByteArray();
    }

    /** Reads {@link #encodeHeaders}' format. */
    public static Map<String, byte[]> decodeHeaders(byte[] encoded) {
        ByteBuffer in = ByteBuffer.wrap(encoded);
        byte format = in.get();
        if (format != HEADER_FORMAT) {
            throw new IllegalStateException("header_bytes in format " + format + " is not known to this version");
        }
        Map<String, byte[]> out = new LinkedHashMap<>();
        while (in.hasRemaining()) {
            byte[] name = new byte[length(in, in.getInt())];
            in.get(name);
            int length = in.getInt();
            byte[] value = null;
            if (length != -1) {
                value = new byte[length(in, length)];
                in.get(value);
            }
            out.put(new String(name, StandardCharsets.UTF_8), value);
        }
        return Collections.unmodifiableMap(out);
    }

    private static int length(ByteBuffer in, int length) {
        if (length < 0 || length > in.remaining()) {
            throw new IllegalStateException("header_bytes is damaged: a length of " + length + " with "
                    + in.remaining() + " bytes left");
        }
        return length;
    }

    private static void writeInt(ByteArrayOutputStream out, int v) {
        out.write(v >>> 24);
        out.write(v >>> 16);
        out.write(v >>> 8);
        out.write(v);
    }

    private static String hex(byte[] bytes) {
        return HEX_PREFIX + HexFormat.of().formatHex(bytes);
    }

    /** The bytes as a string when they are strict UTF-8 without NUL, else null. */
    private static String decode(byte[] bytes) {
        boolean ascii = true;
        for (byte b : bytes) {
            if (b == 0) {
                return null;
            }
            ascii &= b > 0;
        }
        if (ascii) { // the common case, without a decoder
            return new String(bytes, StandardCharsets.US_ASCII);
        }
        try {
            CharBuffer chars = StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT).decode(ByteBuffer.wrap(bytes));
            return chars.toString();
        } catch (CharacterCodingException e) {
            return null;
        }
    }
}
