package io.txoutbox.testing.history;

import java.util.UUID;
import java.util.concurrent.ThreadLocalRandom;

/** Time-ordered UUIDv7 (RFC 9562): 48-bit Unix millis, version 7, random rest. */
final class UuidV7 {

    private UuidV7() {
    }

    static UUID next() {
        ThreadLocalRandom random = ThreadLocalRandom.current();
        long millis = System.currentTimeMillis();
        long msb = (millis << 16) | 0x7000L | (random.nextLong() & 0x0FFFL);
        long lsb = (random.nextLong() & 0x3FFF_FFFF_FFFF_FFFFL) | 0x8000_0000_0000_0000L;
        return new UUID(msb, lsb);
    }
}
