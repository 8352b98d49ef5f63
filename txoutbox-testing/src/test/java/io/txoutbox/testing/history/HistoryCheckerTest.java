package io.txoutbox.testing.history;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import java.util.UUID;
import org.junit.jupiter.api.Test;

class HistoryCheckerTest {

    // Key "a" has seqs 1..3 on partition 0, key "b" seqs 1..2 on partition 1.
    private static final UUID A1 = id(1), A2 = id(2), A3 = id(3), B1 = id(11), B2 = id(12);
    private static final List<LedgerEntry> LEDGER = List.of(
            new LedgerEntry(A1, "a", 1), new LedgerEntry(A2, "a", 2), new LedgerEntry(A3, "a", 3),
            new LedgerEntry(B1, "b", 1), new LedgerEntry(B2, "b", 2));

    @Test
    void cleanHistoryWithAnAllowedDuplicate() {
        HistoryReport report = HistoryChecker.check(LEDGER, topic(
                on(0, A1, A2, A3, A1),
                on(1, B1, B2)));

        assertCounts(report, 5, 5, 0, 0, 1, 2, 0, 0);
        assertThat(report.isClean()).isTrue();
        HistoryAssert.assertThat(report).isClean().hasAtMostDuplicates(1).hasMaxCopiesAtMost(2);
    }

    @Test
    void droppedTailEventIsLost() {
        HistoryReport report = HistoryChecker.check(LEDGER, topic(on(0, A1, A2), on(1, B1, B2)));

        assertCounts(report, 5, 4, 1, 0, 0, 1, 0, 0);
        assertThat(report.lostExamples()).containsExactly(A3);
        assertThat(report.isClean()).isFalse();
        assertThatThrownBy(() -> HistoryAssert.assertClean(report))
                .isInstanceOf(AssertionError.class)
                .hasMessageContaining("lost=1");
    }

    @Test
    void droppedMiddleEventIsLostAndOvertaken() {
        HistoryReport report = HistoryChecker.check(LEDGER, topic(on(0, A1, A3), on(1, B1, B2)));

        assertCounts(report, 5, 4, 1, 0, 0, 1, 1, 0);
        assertThat(report.orderViolationExamples()).containsExactly(new OrderViolation("a", 3, 2, 0, 1));
    }

    @Test
    void swappedPairOfOneKeyIsAnOrderViolation() {
        HistoryReport report = HistoryChecker.check(LEDGER, topic(on(0, A1, A3, A2), on(1, B1, B2)));

        assertCounts(report, 5, 5, 0, 0, 0, 1, 1, 0);
        assertThat(report.orderViolationExamples()).containsExactly(new OrderViolation("a", 3, 2, 0, 1));
        assertThat(report.isClean()).isFalse();
        assertThat(report.summaryLine()).contains("order_violations=1");
    }

    @Test
    void eachOffendingEventIsCountedOnce() {
        // b... is fine; a3 and a2 both overtake a1, a1 itself is late but not early.
        HistoryReport report = HistoryChecker.check(LEDGER, topic(on(0, A3, A2, A1, A3), on(1, B1, B2)));

        assertCounts(report, 5, 5, 0, 0, 1, 2, 2, 0);
        assertThat(report.orderViolationExamples()).containsExactly(
                new OrderViolation("a", 3, 1, 0, 0), new OrderViolation("a", 2, 1, 0, 1));
    }

    @Test
    void duplicatedEventIsStillClean() {
        HistoryReport report = HistoryChecker.check(LEDGER, topic(on(0, A1, A2, A2, A3), on(1, B1, B2)));

        assertCounts(report, 5, 5, 0, 0, 1, 2, 0, 0);
        assertThat(report.isClean()).isTrue();
        assertThatThrownBy(() -> HistoryAssert.assertThat(report).hasNoDuplicates())
                .isInstanceOf(AssertionError.class)
                .hasMessageContaining("duplicates=1");
    }

    @Test
    void phantomEventIsReported() {
        UUID rolledBack = id(99);
        HistoryReport report = HistoryChecker.check(LEDGER, topic(on(0, A1, A2, rolledBack, A3), on(1, B1, B2)));

        assertCounts(report, 5, 5, 0, 1, 0, 1, 0, 0);
        assertThat(report.phantomExamples()).containsExactly(rolledBack);
        assertThat(report.isClean()).isFalse();
    }

    @Test
    void keyOnTwoPartitionsIsAnOrderProblem() {
        HistoryReport report = HistoryChecker.check(LEDGER, topic(on(0, A1, A2, A3), on(1, B1), on(2, B2)));

        assertCounts(report, 5, 5, 0, 0, 0, 1, 0, 1);
        assertThat(report.keysOnSeveralPartitionsExamples()).containsExactly("b");
        assertThat(report.isClean()).isFalse();
        assertThatThrownBy(() -> HistoryAssert.assertThat(report).hasNoOrderViolations())
                .isInstanceOf(AssertionError.class);
    }

    @Test
    void redeliveryOfEarlierEventsAfterLaterOnesIsNoViolation() {
        // A relay retried a batch: a1, a2 come again after a3.
        HistoryReport report = HistoryChecker.check(LEDGER, topic(on(0, A1, A2, A3, A1, A2), on(1, B1, B2, B1)));

        assertCounts(report, 5, 5, 0, 0, 3, 2, 0, 0);
        assertThat(report.isClean()).isTrue();
    }

    @Test
    void inputOrderDoesNotMatterOnlyPartitionAndOffset() {
        List<Delivery> deliveries = topic(on(0, A1, A3, A2), on(1, B1, B2));
        Collections.reverse(deliveries);

        HistoryReport report = HistoryChecker.check(LEDGER, deliveries);

        assertThat(report.orderViolations()).isEqualTo(1);
        assertThat(report.orderViolationExamples()).containsExactly(new OrderViolation("a", 3, 2, 0, 1));
    }

    @Test
    void recordWithoutEventIdIsUnidentifiedAndNotClean() {
        List<Delivery> deliveries = topic(on(0, A1, A2, A3), on(1, B1, B2));
        deliveries.add(new Delivery(null, "a", 0, 3, 0));

        HistoryReport report = HistoryChecker.check(LEDGER, deliveries);

        assertThat(report.unidentified()).isEqualTo(1);
        assertThat(report.lost()).isZero();
        assertThat(report.isClean()).isFalse();
    }

    @Test
    void ledgerWithAnEventTwiceIsRejected() {
        List<LedgerEntry> ledger = List.of(new LedgerEntry(A1, "a", 1), new LedgerEntry(A1, "a", 2));

        assertThatThrownBy(() -> HistoryChecker.check(ledger, List.of()))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining(A1.toString());
    }

    @Test
    void emptyHistoryIsClean() {
        HistoryReport report = HistoryChecker.check(List.of(), List.of());

        assertCounts(report, 0, 0, 0, 0, 0, 0, 0, 0);
        assertThat(report.longestStallMs()).isZero();
        assertThat(report.longestStallFromMs()).isEqualTo(-1);
        assertThat(report.longestStallWaiting()).isNull();
        assertThat(report.isClean()).isTrue();
    }

    @Test
    void longestStallWithoutCommitTimesIsTheLongestGapBetweenFirstDeliveries() {
        List<Delivery> deliveries = List.of(
                new Delivery(A1, "a", 0, 0, 1_000),
                new Delivery(A2, "a", 0, 1, 1_010),
                new Delivery(A1, "a", 0, 2, 1_500), // a duplicate does not end a stall
                new Delivery(A3, "a", 0, 3, 3_010),
                new Delivery(B1, "b", 1, 0, 3_020),
                new Delivery(B2, "b", 1, 1, 3_100));

        HistoryReport report = HistoryChecker.check(LEDGER, deliveries);

        assertThat(report.longestStallMs()).isEqualTo(2_000);
        assertThat(report.longestStallFromMs()).isEqualTo(1_010);
        assertThat(report.longestStallWaiting()).isEqualTo(A3);
        HistoryAssert.assertThat(report).hasLongestStallBelow(Duration.ofMillis(2_001));
        assertThatThrownBy(() -> HistoryAssert.assertThat(report).hasLongestStallBelow(Duration.ofMillis(2_000)))
                .isInstanceOf(AssertionError.class)
                .hasMessageContaining("longest_stall_ms=2000");
    }

    @Test
    void longestStallWithCommitTimesIgnoresIdlePeriods() {
        List<LedgerEntry> ledger = List.of(
                new LedgerEntry(A1, "a", 1, Instant.ofEpochMilli(1_000)),
                new LedgerEntry(A2, "a", 2, Instant.ofEpochMilli(1_020)),
                new LedgerEntry(A3, "a", 3, Instant.ofEpochMilli(5_000)),
                new LedgerEntry(B1, "b", 1, Instant.ofEpochMilli(5_001)));
        List<Delivery> deliveries = List.of(
                new Delivery(A1, "a", 0, 0, 1_010),
                new Delivery(A2, "a", 0, 1, 1_030),
                // nothing committed waits from 1_030 to 5_000: idle, not a stall
                new Delivery(A3, "a", 0, 2, 5_005),
                new Delivery(B1, "b", 1, 0, 5_300));

        HistoryReport report = HistoryChecker.check(ledger, deliveries);

        // b1 waits from 5_001; a3's first delivery at 5_005 restarts the clock; the stall is 5_005 -> 5_300
        assertThat(report.longestStallMs()).isEqualTo(295);
        assertThat(report.longestStallFromMs()).isEqualTo(5_005);
        assertThat(report.longestStallWaiting()).isEqualTo(B1);
        assertThat(report.summaryLine()).endsWith("longest_stall_ms=295 (from " + Instant.ofEpochMilli(5_005)
                + ", waiting " + B1 + ")");
    }

    @Test
    void lostEventsStallUntilTheLastRecordSeen() {
        List<LedgerEntry> ledger = List.of(
                new LedgerEntry(A1, "a", 1, Instant.ofEpochMilli(1_000)),
                new LedgerEntry(B1, "b", 1, Instant.ofEpochMilli(1_000)),
                new LedgerEntry(B2, "b", 2, Instant.ofEpochMilli(1_100)));
        List<Delivery> deliveries = List.of(
                new Delivery(A1, "a", 0, 0, 1_010),
                new Delivery(B1, "b", 1, 0, 1_020),
                new Delivery(A1, "a", 0, 1, 9_000));

        HistoryReport report = HistoryChecker.check(ledger, deliveries);

        assertThat(report.lost()).isEqualTo(1);
        assertThat(report.longestStallMs()).isEqualTo(9_000 - 1_100);
        assertThat(report.longestStallFromMs()).isEqualTo(1_100);
        assertThat(report.longestStallWaiting()).as("the lost one").isEqualTo(B2);
    }

    @Test
    void largeShuffledHistoryIsCheckedExactly() {
        int keys = 1_000;
        int events = 200_000;
        Random random = new Random(42);
        List<LedgerEntry> ledger = new ArrayList<>(events);
        long[] nextSeq = new long[keys];
        List<List<Delivery>> partitions = new ArrayList<>();
        for (int p = 0; p < 12; p++) {
            partitions.add(new ArrayList<>());
        }
        for (int i = 0; i < events; i++) {
            int key = random.nextInt(keys);
            LedgerEntry entry = new LedgerEntry(UUID.randomUUID(), "k-" + key, ++nextSeq[key]);
            ledger.add(entry);
            List<Delivery> partition = partitions.get(key % 12);
            partition.add(new Delivery(entry.eventId(), entry.key(), key % 12, partition.size(), i));
        }
        // one swap inside partition 0 between two events of the same key, and one duplicate
        List<Delivery> p0 = partitions.get(0);
        int first = 0;
        int second = indexOfNextWithKey(p0, first);
        Delivery a = p0.get(first);
        Delivery b = p0.get(second);
        p0.set(first, new Delivery(b.eventId(), b.key(), 0, a.offset(), a.timestampMs()));
        p0.set(second, new Delivery(a.eventId(), a.key(), 0, b.offset(), b.timestampMs()));
        p0.add(new Delivery(a.eventId(), a.key(), 0, p0.size(), events));
        List<Delivery> deliveries = new ArrayList<>();
        partitions.forEach(deliveries::addAll);
        Collections.shuffle(deliveries, random);
        Collections.shuffle(ledger, random);

        // (speed is not asserted here: timings belong in benchmarks, not in tests on a shared machine)
        HistoryReport report = HistoryChecker.check(ledger, deliveries);

        assertCounts(report, events, events, 0, 0, 1, 2, 1, 0);
    }

    private static int indexOfNextWithKey(List<Delivery> partition, int from) {
        for (int i = from + 1; i < partition.size(); i++) {
            if (partition.get(i).key().equals(partition.get(from).key())) {
                return i;
            }
        }
        throw new IllegalStateException("no second event of key " + partition.get(from).key());
    }

    private static void assertCounts(HistoryReport report, long committed, long delivered, long lost, long phantom,
                                     long duplicates, int maxCopies, long orderViolations, long keysOnSeveral) {
        assertThat(report)
                .as(report.toString())
                .extracting(HistoryReport::committed, HistoryReport::delivered, HistoryReport::lost,
                        HistoryReport::phantom, HistoryReport::duplicates, HistoryReport::maxCopies,
                        HistoryReport::orderViolations, HistoryReport::keysOnSeveralPartitions)
                .containsExactly(committed, delivered, lost, phantom, duplicates, maxCopies, orderViolations,
                        keysOnSeveral);
    }

    /** Records of one partition at offsets 0, 1, 2, …, keyed by the ledger key of each event. */
    private static List<Delivery> on(int partition, UUID... ids) {
        List<Delivery> records = new ArrayList<>();
        for (int offset = 0; offset < ids.length; offset++) {
            records.add(new Delivery(ids[offset], keyOf(ids[offset]), partition, offset, 1_000L + offset));
        }
        return records;
    }

    @SafeVarargs
    private static List<Delivery> topic(List<Delivery>... partitions) {
        List<Delivery> all = new ArrayList<>();
        for (List<Delivery> partition : partitions) {
            all.addAll(partition);
        }
        return all;
    }

    private static String keyOf(UUID id) {
        return LEDGER.stream().filter(e -> e.eventId().equals(id)).map(LedgerEntry::key).findFirst().orElse("x");
    }

    private static UUID id(long n) {
        return new UUID(0x0123_4567_89ab_7defL, n);
    }
}
