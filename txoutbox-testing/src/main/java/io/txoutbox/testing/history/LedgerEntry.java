package io.txoutbox.testing.history;

import java.time.Instant;
import java.util.Objects;
import java.util.UUID;

/**
 * One committed event of the ledger.
 *
 * @param eventId     the event's id (also carried by the published record)
 * @param key         the ordering key (partition key) of the event
 * @param seq         the event's position in its key's order, 1-based, without gaps among committed events
 * @param committedAt when the event's row was written inside its transaction (slightly before the commit), or
 *                    {@code null} when unknown; used only to measure stalls
 */
public record LedgerEntry(UUID eventId, String key, long seq, Instant committedAt) {

    public LedgerEntry {
        Objects.requireNonNull(eventId, "eventId");
        Objects.requireNonNull(key, "key");
    }

    /** An entry without a commit time (hand-made histories). */
    public LedgerEntry(UUID eventId, String key, long seq) {
        this(eventId, key, seq, null);
    }
}
