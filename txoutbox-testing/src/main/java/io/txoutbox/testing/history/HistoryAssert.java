package io.txoutbox.testing.history;

import java.time.Duration;
import java.util.Objects;

/**
 * Fluent assertions on a {@link HistoryReport}; every failure throws an {@link AssertionError} whose message carries
 * the full report.
 *
 * <pre>{@code
 * HistoryAssert.assertThat(report).isClean().hasAtMostDuplicates(50).hasLongestStallBelow(Duration.ofSeconds(5));
 * }</pre>
 */
public final class HistoryAssert {

    private final HistoryReport report;

    private HistoryAssert(HistoryReport report) {
        this.report = Objects.requireNonNull(report, "report");
    }

    public static HistoryAssert assertThat(HistoryReport report) {
        return new HistoryAssert(report);
    }

    /** Shorthand for {@code assertThat(report).isClean()}. */
    public static void assertClean(HistoryReport report) {
        assertThat(report).isClean();
    }

    /** No lost, phantom or unidentified events, no order violation, no key on several partitions. */
    public HistoryAssert isClean() {
        return check(report.isClean(), "expected a clean history");
    }

    /** Every committed event arrived ({@code lost == 0}). */
    public HistoryAssert hasNoLoss() {
        return check(report.lost() == 0, "expected no lost event");
    }

    public HistoryAssert hasNoPhantoms() {
        return check(report.phantom() == 0, "expected no phantom event");
    }

    public HistoryAssert hasNoOrderViolations() {
        return check(report.orderViolations() == 0 && report.keysOnSeveralPartitions() == 0,
                "expected first deliveries in per-key order on one partition per key");
    }

    public HistoryAssert hasNoDuplicates() {
        return check(report.duplicates() == 0, "expected no duplicate");
    }

    public HistoryAssert hasAtMostDuplicates(long max) {
        return check(report.duplicates() <= max, "expected at most " + max + " duplicates");
    }

    public HistoryAssert hasMaxCopiesAtMost(int max) {
        return check(report.maxCopies() <= max, "expected at most " + max + " copies of any event");
    }

    public HistoryAssert hasCommitted(long expected) {
        return check(report.committed() == expected, "expected " + expected + " committed events");
    }

    public HistoryAssert hasCommittedAtLeast(long min) {
        return check(report.committed() >= min, "expected at least " + min + " committed events");
    }

    public HistoryAssert hasLongestStallBelow(Duration max) {
        return check(report.longestStallMs() < max.toMillis(), "expected every stall below " + max.toMillis() + " ms");
    }

    private HistoryAssert check(boolean ok, String expectation) {
        if (!ok) {
            throw new AssertionError(expectation + ", but: " + report);
        }
        return this;
    }
}
