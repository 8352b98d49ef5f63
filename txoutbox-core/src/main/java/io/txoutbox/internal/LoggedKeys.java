package io.txoutbox.internal;

import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.SecureRandom;
import java.util.HexFormat;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * How a partition key appears in a log line. Keys are often personal data (a customer id, an e-mail address), so
 * unless a component is configured to log them ({@code logPartitionKeys(true)}) a line shows a tag instead:
 * {@code #} and 8 hex digits of an HMAC-SHA256 of the key under a secret drawn when the class is loaded. The same key
 * gets the same tag in every line of one process, so the lines of a key can still be followed; a plain hash would
 * not do, because a key taken from a small set (numbers, known addresses) is found again by hashing candidates, and
 * the secret never leaves the process. The event id in the same line leads an operator to the key itself
 * ({@code OutboxAdmin.show}, {@code InboxAdmin}).
 */
public final class LoggedKeys {

    private static final SecretKeySpec SECRET;

    static {
        byte[] secret = new byte[32];
        new SecureRandom().nextBytes(secret);
        SECRET = new SecretKeySpec(secret, "HmacSHA256");
    }

    private LoggedKeys() {
    }

    /** The key as a log line shows it: itself when {@code plain}, else its tag; {@code none} for no key. */
    public static String show(String key, boolean plain) {
        if (key == null) {
            return "none";
        }
        return plain ? key : tag(key);
    }

    /** {@code #} and 8 hex digits, stable for a key within this process. */
    public static String tag(String key) {
        try {
            Mac mac = Mac.getInstance("HmacSHA256"); // not thread-safe; only failure lines get here
            mac.init(SECRET);
            byte[] digest = mac.doFinal(key.getBytes(StandardCharsets.UTF_8));
            return "#" + HexFormat.of().formatHex(digest, 0, 4);
        } catch (GeneralSecurityException e) {
            return "#hidden"; // HmacSHA256 is in every Java runtime; never show the key instead
        }
    }
}
