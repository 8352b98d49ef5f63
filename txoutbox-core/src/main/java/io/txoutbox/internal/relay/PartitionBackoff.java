package io.txoutbox.internal.relay;

import io.txoutbox.spi.OutboxRecord;
import io.txoutbox.spi.PartitionUnavailableException;
import io.txoutbox.spi.SendResult;
import java.time.Duration;

/**
 * The backoff of a key whose partition is unavailable while the rest of the lane goes on. No attempt is counted (the
 * record is not at fault), and the delay grows with the event's age — an eighth of it, from the lane's shortest
 * outage pause up to {@code relay.outageBackoffMax} — so a long-sick partition with many keys costs few row updates,
 * and a healed one waits at most {@code outageBackoffMax} for its keys' next try.
 */
final class PartitionBackoff {

    static final long MIN_DELAY_MS = 100;

    private PartitionBackoff() {
    }

    /** True when the failure concerns one partition, not the transport: it does not make the batch an outage. */
    static boolean isPartitionScoped(SendResult.Failed failed) {
        return failed.kind() == SendResult.Kind.UNAVAILABLE
                && failed.cause() instanceof PartitionUnavailableException;
    }

    static long delayMs(OutboxRecord r, Duration outageBackoffMax, long nowMillis) {
        long max = Math.max(MIN_DELAY_MS, outageBackoffMax.toMillis());
        long ageMs = r.createdAt() == null ? 0 : Math.max(0, nowMillis - r.createdAt().toEpochMilli());
        return Math.min(max, Math.max(MIN_DELAY_MS, ageMs / 8));
    }
}
