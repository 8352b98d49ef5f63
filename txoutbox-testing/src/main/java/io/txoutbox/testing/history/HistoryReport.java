package io.txoutbox.testing.history;

import java.util.List;
import java.util.UUID;

/**
 * What {@link HistoryChecker} found when it compared the ledger (what committed) with the deliveries (what arrived).
 *
 * @param committed                    committed events in the ledger
 * @param delivered                    distinct committed events that arrived at least once
 * @param lost                         committed events that never arrived
 * @param lostExamples                 some lost event ids (capped)
 * @param phantom                      distinct event ids that arrived but never committed (e.g. from a rolled-back
 *                                     transaction)
 * @param phantomExamples              some phantom event ids (capped)
 * @param duplicates                   extra copies in total: deliveries of identified events minus distinct
 *                                     identified events
 * @param maxCopies                    the most copies of one event (0 if nothing arrived, 1 without duplicates)
 * @param orderViolations              committed events whose first delivery overtook an earlier committed, not yet
 *                                     delivered event of the same key (each offending event counted once)
 * @param orderViolationExamples       some violations (capped)
 * @param keysOnSeveralPartitions      keys whose records arrived on more than one partition (no order is possible)
 * @param keysOnSeveralPartitionsExamples some of those keys (capped)
 * @param unidentified                 records from which no event id could be extracted
 * @param longestStallMs               the longest time, in ms, without a first delivery while committed work was
 *                                     waiting; see {@link HistoryChecker} for the exact definition
 * @param longestStallFromMs           when that stall began (epoch ms), or -1 when there was none
 * @param longestStallWaiting          an event that waited through all of that stall (the earliest committed
 *                                     of those; without commit times, the one whose first delivery ended it), or
 *                                     {@code null} when there was none
 */
public record HistoryReport(
        long committed,
        long delivered,
        long lost,
        List<UUID> lostExamples,
        long phantom,
        List<UUID> phantomExamples,
        long duplicates,
        int maxCopies,
        long orderViolations,
        List<OrderViolation> orderViolationExamples,
        long keysOnSeveralPartitions,
        List<String> keysOnSeveralPartitionsExamples,
        long unidentified,
        long longestStallMs,
        long longestStallFromMs,
        UUID longestStallWaiting) {

    public HistoryReport {
        lostExamples = List.copyOf(lostExamples);
        phantomExamples = List.copyOf(phantomExamples);
        orderViolationExamples = List.copyOf(orderViolationExamples);
        keysOnSeveralPartitionsExamples = List.copyOf(keysOnSeveralPartitionsExamples);
    }

    /**
     * No lost, phantom or unidentified event, no order violation and no key on several partitions. Duplicates are
     * allowed (delivery is at-least-once); bound them separately with {@link HistoryAssert}.
     */
    public boolean isClean() {
        return lost == 0 && phantom == 0 && orderViolations == 0 && keysOnSeveralPartitions == 0 && unidentified == 0;
    }

    /** One line with all counts, for logs and assertion messages. */
    public String summaryLine() {
        return "committed=" + committed
                + " delivered=" + delivered
                + " lost=" + lost
                + " phantom=" + phantom
                + " duplicates=" + duplicates
                + " max_copies=" + maxCopies
                + " order_violations=" + orderViolations
                + " keys_on_several_partitions=" + keysOnSeveralPartitions
                + " unidentified=" + unidentified
                + " longest_stall_ms=" + longestStallMs
                + (longestStallFromMs < 0 ? ""
                        : " (from " + java.time.Instant.ofEpochMilli(longestStallFromMs) + ", waiting "
                                + longestStallWaiting + ")");
    }

    /** The summary line followed by the examples of whatever went wrong. */
    @Override
    public String toString() {
        StringBuilder text = new StringBuilder(summaryLine());
        appendExamples(text, "lost", lost, lostExamples);
        appendExamples(text, "phantom", phantom, phantomExamples);
        appendExamples(text, "order violations", orderViolations, orderViolationExamples);
        appendExamples(text, "keys on several partitions", keysOnSeveralPartitions, keysOnSeveralPartitionsExamples);
        return text.toString();
    }

    private static void appendExamples(StringBuilder text, String what, long count, List<?> examples) {
        if (count == 0) {
            return;
        }
        text.append(System.lineSeparator()).append("  ").append(what).append(" (").append(count).append("): ");
        text.append(examples);
        if (examples.size() < count) {
            text.append(" …");
        }
    }
}
