package io.txoutbox.testing.history;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;

/**
 * Compares what committed (the ledger) with what arrived (the deliveries) and reports every departure from the
 * guarantees: lost, phantom and duplicated events, per-key first-delivery order, keys split over partitions and
 * stalls. Pure, deterministic logic; O(n log n) in the number of ledger entries and deliveries.
 *
 * <h2>Order</h2>
 * Deliveries are walked in (partition, offset) order. For every ledger key, only the <em>first</em> delivery of
 * each event counts: a first delivery of seq {@code s} is a violation when a committed seq {@code < s} of that key
 * has not had its first delivery yet. Repeating an already delivered event (a redelivery) is a duplicate, never an
 * order violation. Events are grouped by their <em>ledger</em> key; the record key is not used for ordering. A key
 * whose records arrived on several partitions is counted in {@code keysOnSeveralPartitions}; its deliveries are
 * then walked partition after partition, which usually also yields order violations.
 *
 * <h2>Longest stall</h2>
 * When every ledger entry has a {@code committedAt}, the longest stall is the longest interval during which at
 * least one committed event was waiting for its first delivery and no first delivery happened: for each pair of
 * consecutive first deliveries (by record timestamp) the interval starts at the later of the first delivery and
 * the earliest commit among the events still waiting; lost events keep waiting until the last record seen.
 * Without commit times it is simply the longest gap between consecutive first deliveries (idle periods of the
 * writers then count too). Timestamps are in milliseconds.
 */
public final class HistoryChecker {

    /** How many examples of each problem a report keeps by default. */
    public static final int DEFAULT_MAX_EXAMPLES = 10;

    private static final Comparator<Delivery> PARTITION_OFFSET_ORDER =
            Comparator.comparingInt(Delivery::partition).thenComparingLong(Delivery::offset);

    private final int maxExamples;

    /** A checker that keeps at most {@code maxExamples} examples of each problem. */
    public HistoryChecker(int maxExamples) {
        if (maxExamples < 0) {
            throw new IllegalArgumentException("maxExamples must be >= 0, was " + maxExamples);
        }
        this.maxExamples = maxExamples;
    }

    /** Checks with {@link #DEFAULT_MAX_EXAMPLES}. */
    public static HistoryReport check(Collection<LedgerEntry> ledger, Collection<Delivery> deliveries) {
        return new HistoryChecker(DEFAULT_MAX_EXAMPLES).evaluate(ledger, deliveries);
    }

    /**
     * Compares {@code ledger} with {@code deliveries}; the order of either collection does not matter.
     *
     * @throws IllegalArgumentException if the ledger holds an event id twice
     */
    public HistoryReport evaluate(Collection<LedgerEntry> ledger, Collection<Delivery> deliveries) {
        Events events = Events.of(ledger);
        int n = events.entries.length;

        Delivery[] ordered = deliveries.toArray(new Delivery[0]);
        Arrays.sort(ordered, PARTITION_OFFSET_ORDER);

        int[] copies = new int[n];
        long[] firstDeliveryMs = new long[n];
        Map<UUID, Integer> phantomCopies = new LinkedHashMap<>();
        int[] keyPartition = new int[events.keyCount];
        Arrays.fill(keyPartition, -1);
        boolean[] keyOnSeveral = new boolean[events.keyCount];

        long delivered = 0;
        long unidentified = 0;
        long orderViolations = 0;
        long keysOnSeveralPartitions = 0;
        long lastSeenMs = Long.MIN_VALUE;
        List<OrderViolation> violationExamples = new ArrayList<>();
        List<String> severalExamples = new ArrayList<>();

        for (Delivery delivery : ordered) {
            lastSeenMs = Math.max(lastSeenMs, delivery.timestampMs());
            if (delivery.eventId() == null) {
                unidentified++;
                continue;
            }
            Integer index = events.indexById.get(delivery.eventId());
            if (index == null) {
                phantomCopies.merge(delivery.eventId(), 1, Integer::sum);
                continue;
            }
            int event = index;
            int key = events.keyOf[event];
            if (keyPartition[key] == -1) {
                keyPartition[key] = delivery.partition();
            } else if (keyPartition[key] != delivery.partition() && !keyOnSeveral[key]) {
                keyOnSeveral[key] = true;
                keysOnSeveralPartitions++;
                addExample(severalExamples, events.keyNames[key]);
            }
            if (++copies[event] > 1) {
                continue;
            }
            delivered++;
            firstDeliveryMs[event] = delivery.timestampMs();
            long expected = events.markFirstDelivered(event);
            if (expected != NONE) {
                orderViolations++;
                addExample(violationExamples, new OrderViolation(events.keyNames[key], events.entries[event].seq(),
                        expected, delivery.partition(), delivery.offset()));
            }
        }

        long lost = n - delivered;
        List<UUID> lostExamples = new ArrayList<>();
        int maxCopies = 0;
        long identifiedDeliveries = 0;
        for (int event = 0; event < n; event++) {
            if (copies[event] == 0) {
                addExample(lostExamples, events.entries[event].eventId());
            }
            maxCopies = Math.max(maxCopies, copies[event]);
            identifiedDeliveries += copies[event];
        }
        List<UUID> phantomExamples = new ArrayList<>();
        for (Map.Entry<UUID, Integer> phantom : phantomCopies.entrySet()) {
            addExample(phantomExamples, phantom.getKey());
            maxCopies = Math.max(maxCopies, phantom.getValue());
            identifiedDeliveries += phantom.getValue();
        }
        long duplicates = identifiedDeliveries - delivered - phantomCopies.size();
        Stall stall = longestStall(events.entries, copies, firstDeliveryMs, lastSeenMs);

        return new HistoryReport(n, delivered, lost, lostExamples, phantomCopies.size(), phantomExamples,
                duplicates, maxCopies, orderViolations, violationExamples, keysOnSeveralPartitions, severalExamples,
                unidentified, stall.ms, stall.fromMs,
                stall.waiting < 0 ? null : events.entries[stall.waiting].eventId());
    }

    private <T> void addExample(List<T> examples, T example) {
        if (examples.size() < maxExamples) {
            examples.add(example);
        }
    }

    /** The longest stall: its length, when it began (epoch ms, -1: none), an event that waited through it (-1). */
    private record Stall(long ms, long fromMs, int waiting) {
        static final Stall NONE = new Stall(0, -1, -1);

        Stall longer(long from, long to, int event) {
            return to - from > ms ? new Stall(to - from, from, event) : this;
        }
    }

    private static Stall longestStall(LedgerEntry[] entries, int[] copies, long[] firstDeliveryMs,
            long lastSeenMs) {
        int n = entries.length;
        boolean withCommitTimes = n > 0;
        for (LedgerEntry entry : entries) {
            withCommitTimes &= entry.committedAt() != null;
        }
        // Events by first delivery; lost ones last (they wait until the last record seen).
        long[] deliveredAt = new long[n];
        Integer[] byDelivery = new Integer[n];
        int deliveredCount = 0;
        for (int event = 0; event < n; event++) {
            byDelivery[event] = event;
            deliveredAt[event] = copies[event] > 0 ? firstDeliveryMs[event] : Long.MAX_VALUE;
            if (copies[event] > 0) {
                deliveredCount++;
            }
        }
        Arrays.sort(byDelivery, Comparator.comparingLong(event -> deliveredAt[event]));

        Stall longest = Stall.NONE;
        if (!withCommitTimes) {
            for (int i = 1; i < deliveredCount; i++) {
                longest = longest.longer(deliveredAt[byDelivery[i - 1]], deliveredAt[byDelivery[i]], byDelivery[i]);
            }
            return longest;
        }
        // earliestWaiting[i] = earliest commit among the events whose first delivery is the i-th or later;
        // earliestWaitingEvent[i] = that event.
        long[] earliestWaiting = new long[n + 1];
        int[] earliestWaitingEvent = new int[n + 1];
        earliestWaiting[n] = Long.MAX_VALUE;
        earliestWaitingEvent[n] = -1;
        for (int i = n - 1; i >= 0; i--) {
            long committedAt = entries[byDelivery[i]].committedAt().toEpochMilli();
            boolean earlier = committedAt < earliestWaiting[i + 1];
            earliestWaiting[i] = earlier ? committedAt : earliestWaiting[i + 1];
            earliestWaitingEvent[i] = earlier ? byDelivery[i] : earliestWaitingEvent[i + 1];
        }
        for (int i = 0; i < n; i++) {
            long end = i < deliveredCount ? deliveredAt[byDelivery[i]] : lastSeenMs;
            long previous = i == 0 ? Long.MIN_VALUE : deliveredAt[byDelivery[i - 1]];
            long start = Math.max(previous, earliestWaiting[i]);
            if (end != Long.MIN_VALUE && end > start) {
                longest = longest.longer(start, end, earliestWaitingEvent[i]);
            }
            if (i >= deliveredCount) {
                break; // every later event is lost too: one interval up to the last record covers them all
            }
        }
        return longest;
    }

    private static final long NONE = Long.MIN_VALUE;

    /** The ledger indexed by event id, with each event's rank within its key and per-key delivery progress. */
    private static final class Events {
        final LedgerEntry[] entries;
        final Map<UUID, Integer> indexById;
        final int keyCount;
        final String[] keyNames;
        final int[] keyOf;
        final int[] rankInKey;
        /** Per key: its events ordered by seq. */
        final int[][] eventsOfKey;
        /** Per key: rank of the lowest-seq event not yet delivered. */
        final int[] nextExpected;
        final boolean[] firstDelivered;

        private Events(LedgerEntry[] entries) {
            int n = entries.length;
            this.entries = entries;
            this.indexById = new HashMap<>(Math.max(16, n * 2));
            Map<String, List<Integer>> byKey = new LinkedHashMap<>();
            for (int event = 0; event < n; event++) {
                if (indexById.putIfAbsent(entries[event].eventId(), event) != null) {
                    throw new IllegalArgumentException("ledger holds event " + entries[event].eventId() + " twice");
                }
                byKey.computeIfAbsent(entries[event].key(), key -> new ArrayList<>()).add(event);
            }
            this.keyCount = byKey.size();
            this.keyNames = new String[keyCount];
            this.keyOf = new int[n];
            this.rankInKey = new int[n];
            this.eventsOfKey = new int[keyCount][];
            this.nextExpected = new int[keyCount];
            this.firstDelivered = new boolean[n];
            int key = 0;
            for (Map.Entry<String, List<Integer>> group : byKey.entrySet()) {
                keyNames[key] = group.getKey();
                int[] ofKey = group.getValue().stream().mapToInt(Integer::intValue).toArray();
                Integer[] boxed = Arrays.stream(ofKey).boxed().toArray(Integer[]::new);
                Arrays.sort(boxed, Comparator.comparingLong(event -> entries[event].seq()));
                for (int rank = 0; rank < boxed.length; rank++) {
                    ofKey[rank] = boxed[rank];
                    keyOf[boxed[rank]] = key;
                    rankInKey[boxed[rank]] = rank;
                }
                eventsOfKey[key] = ofKey;
                key++;
            }
        }

        static Events of(Collection<LedgerEntry> ledger) {
            return new Events(ledger.toArray(new LedgerEntry[0]));
        }

        /**
         * Records the first delivery of {@code event}; returns the seq it overtook, or {@link #NONE} if it came
         * in order.
         */
        long markFirstDelivered(int event) {
            int key = keyOf[event];
            int[] ofKey = eventsOfKey[key];
            int expectedRank = nextExpected[key];
            long overtaken = expectedRank < rankInKey[event] ? entries[ofKey[expectedRank]].seq() : NONE;
            firstDelivered[event] = true;
            int next = expectedRank;
            while (next < ofKey.length && firstDelivered[ofKey[next]]) {
                next++;
            }
            nextExpected[key] = next;
            return overtaken;
        }
    }
}
