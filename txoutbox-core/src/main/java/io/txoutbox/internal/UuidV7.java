package io.txoutbox.internal;

import java.security.SecureRandom;
import java.util.UUID;

/**
 * UUID version 7 (RFC 9562): 48 bits of Unix milliseconds, then random bits. Ids made in one JVM are strictly
 * increasing (a 12-bit counter in {@code rand_a} orders ids of the same millisecond), so they sort like the events.
 */
public final class UuidV7 {

    private static final SecureRandom RANDOM = new SecureRandom();
    private static final Object LOCK = new Object();
    private static long lastMillis;
    private static int counter;

    private UuidV7() {
    }

    public static UUID next() {
        return at(System.currentTimeMillis());
    }

    static UUID at(long nowMillis) {
        long millis;
        int seq;
        synchronized (LOCK) {
            if (nowMillis > lastMillis) {
                lastMillis = nowMillis;
                counter = RANDOM.nextInt(1 << 11); // leave headroom so the counter rarely overflows
            } else {
                counter++;
                if (counter >= (1 << 12)) { // overflow: borrow the next millisecond
                    lastMillis++;
                    counter = 0;
                }
            }
            millis = lastMillis;
            seq = counter;
        }
        long msb = (millis << 16) | (0x7L << 12) | seq;
        long lsb = (RANDOM.nextLong() & 0x3FFF_FFFF_FFFF_FFFFL) | 0x8000_0000_0000_0000L;
        return new UUID(msb, lsb);
    }

    /** The Unix milliseconds embedded in a version-7 UUID. */
    public static long millisOf(UUID uuid) {
        if (uuid.version() != 7) {
            throw new IllegalArgumentException("not a UUIDv7: " + uuid);
        }
        return uuid.getMostSignificantBits() >>> 16;
    }
}
