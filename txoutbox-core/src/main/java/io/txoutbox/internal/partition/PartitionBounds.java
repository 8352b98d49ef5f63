package io.txoutbox.internal.partition;

import io.txoutbox.OutboxPartitioning;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;

/**
 * The arithmetic of partition bounds, without a database: which event ids a period holds, which partitions exist
 * ahead, which have expired, where a conversion puts the legacy partition's bound.
 *
 * <p>A UUIDv7 begins with its creation time in milliseconds and PostgreSQL compares UUIDs byte by byte, so the ids
 * made from an instant on are those at or after {@code <ms>0000-0000-0000-000000000000}; periods are UTC
 * ({@link OutboxPartitioning.Period}), so no time zone or daylight-saving shift moves a bound.
 */
final class PartitionBounds {

    /** The legacy partition's bound lies at least this far ahead when the conversion finishes. */
    static final Duration CONVERSION_MARGIN = Duration.ofHours(1);

    private PartitionBounds() {
    }

    /** One period's partition: its name and its range of event ids, {@code from} inclusive, {@code to} exclusive. */
    record Range(String name, Instant start, UUID from, UUID to) {
    }

    /** The lowest event id of a UUIDv7 made at {@code t}: the bound of the partition that starts at {@code t}. */
    static UUID bound(Instant t) {
        return new UUID(t.toEpochMilli() << 16, 0L);
    }

    /** The instant a bound stands for (the inverse of {@link #bound}, for messages). */
    static Instant instantOf(UUID bound) {
        return Instant.ofEpochMilli(bound.getMostSignificantBits() >>> 16);
    }

    /** Compares as PostgreSQL does: unsigned, byte by byte. */
    static int compare(UUID a, UUID b) {
        int c = Long.compareUnsigned(a.getMostSignificantBits(), b.getMostSignificantBits());
        return c != 0 ? c : Long.compareUnsigned(a.getLeastSignificantBits(), b.getLeastSignificantBits());
    }

    /**
     * Whether the range {@code [from, to)} ({@code null}: MINVALUE / MAXVALUE) shares an id with {@code [start, end)}.
     */
    static boolean overlaps(UUID from, UUID to, UUID start, UUID end) {
        return (from == null || compare(from, end) < 0) && (to == null || compare(start, to) < 0);
    }

    /** Whether a range that ends at {@code to} ({@code null}: MAXVALUE) ended at or before {@code cutoff}. */
    static boolean endedBy(UUID to, Instant cutoff) {
        return to != null && compare(to, bound(cutoff)) <= 0;
    }

    /** The partitions of the period that contains {@code now} and of the {@code ahead} periods after it, in order. */
    static List<Range> currentAndAhead(String table, OutboxPartitioning partitioning, Instant now) {
        OutboxPartitioning.Period period = partitioning.period();
        List<Range> out = new ArrayList<>(partitioning.ahead() + 1);
        Instant start = period.startOf(now);
        for (int i = 0; i <= partitioning.ahead(); i++, start = period.next(start)) {
            out.add(new Range(table + period.suffix(start), start, bound(start), bound(period.next(start))));
        }
        return out;
    }

    /**
     * The bound a conversion gives the legacy partition when it starts (or moves its bound) at {@code now}: the start
     * of the first period that begins after {@code now} plus {@link #CONVERSION_MARGIN}.
     */
    static UUID conversionBound(OutboxPartitioning partitioning, Instant now) {
        OutboxPartitioning.Period period = partitioning.period();
        return bound(period.next(period.startOf(now.plus(CONVERSION_MARGIN))));
    }

    /**
     * Whether a stopped conversion's bound ({@code null}: unknown) has come within {@link #CONVERSION_MARGIN} of
     * {@code now}, so that the conversion moves it ahead before it goes on.
     */
    static boolean tooNear(UUID bound, Instant now) {
        return bound == null || compare(bound, bound(now.plus(CONVERSION_MARGIN))) <= 0;
    }
}
