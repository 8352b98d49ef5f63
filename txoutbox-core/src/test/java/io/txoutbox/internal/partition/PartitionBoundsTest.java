package io.txoutbox.internal.partition;

import static org.assertj.core.api.Assertions.assertThat;

import io.txoutbox.OutboxPartitioning;
import io.txoutbox.internal.partition.PartitionBounds.Range;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZonedDateTime;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.Test;

class PartitionBoundsTest {

    private static final Instant T = Instant.parse("2026-11-30T13:45:07.123Z");

    @Test
    void a_bound_is_the_lowest_uuidv7_of_its_millisecond_and_comes_back_as_that_instant() {
        UUID b = PartitionBounds.bound(Instant.parse("2026-12-01T00:00:00Z"));
        assertThat(b.toString()).isEqualTo(String.format("%012x", Instant.parse("2026-12-01T00:00:00Z")
                .toEpochMilli()).replaceFirst("(.{8})(.{4})", "$1-$2") + "-0000-0000-000000000000");
        assertThat(PartitionBounds.instantOf(b)).isEqualTo(Instant.parse("2026-12-01T00:00:00Z"));
        // a sub-millisecond part is dropped, as a UUIDv7 drops it
        assertThat(PartitionBounds.bound(Instant.parse("2026-12-01T00:00:00.000999Z"))).isEqualTo(b);
    }

    @Test
    void compares_unsigned_byte_by_byte_as_postgresql_does() {
        UUID low = UUID.fromString("7fffffff-ffff-ffff-ffff-ffffffffffff");
        UUID high = UUID.fromString("80000000-0000-0000-0000-000000000000");
        assertThat(PartitionBounds.compare(low, high)).isNegative(); // signed longs would say the opposite
        assertThat(PartitionBounds.compare(high, low)).isPositive();
        UUID a = UUID.fromString("00000000-0000-0000-7fff-ffffffffffff");
        UUID b = UUID.fromString("00000000-0000-0000-8000-000000000000");
        assertThat(PartitionBounds.compare(a, b)).isNegative();
        assertThat(PartitionBounds.compare(a, a)).isZero();
    }

    @Test
    void a_day_partition_starts_at_midnight_utc_whatever_the_zone_of_the_instant() {
        // 00:30 in Berlin is still the previous day in UTC
        Instant berlinAfterMidnight = ZonedDateTime.of(2026, 12, 1, 0, 30, 0, 0, ZoneId.of("Europe/Berlin"))
                .toInstant();
        List<Range> ranges = PartitionBounds.currentAndAhead("outbox_event",
                new OutboxPartitioning(OutboxPartitioning.Period.DAY, 1), berlinAfterMidnight);
        assertThat(ranges).extracting(Range::name).containsExactly("outbox_event_p20261130", "outbox_event_p20261201");
        assertThat(ranges.get(0).from()).isEqualTo(PartitionBounds.bound(Instant.parse("2026-11-30T00:00:00Z")));
        assertThat(ranges.get(0).to()).isEqualTo(ranges.get(1).from());
        assertThat(ranges.get(1).to()).isEqualTo(PartitionBounds.bound(Instant.parse("2026-12-02T00:00:00Z")));
    }

    @Test
    void days_across_a_daylight_saving_change_stay_24_hours_long() {
        // Europe changes clocks on 2026-10-25; UTC periods do not move
        List<Range> ranges = PartitionBounds.currentAndAhead("t", new OutboxPartitioning(OutboxPartitioning.Period.DAY,
                2), Instant.parse("2026-10-24T23:59:59.999Z"));
        for (Range r : ranges) {
            assertThat(PartitionBounds.instantOf(r.to()).toEpochMilli()
                    - PartitionBounds.instantOf(r.from()).toEpochMilli()).isEqualTo(86_400_000L);
        }
        assertThat(ranges).extracting(Range::name).containsExactly("t_p20261024", "t_p20261025", "t_p20261026");
    }

    @Test
    void months_follow_the_calendar_across_the_year_end_and_february() {
        List<Range> ranges = PartitionBounds.currentAndAhead("outbox_event",
                new OutboxPartitioning(OutboxPartitioning.Period.MONTH, 3), Instant.parse("2026-12-31T23:59:59.999Z"));
        assertThat(ranges).extracting(Range::name).containsExactly("outbox_event_p202612", "outbox_event_p202701",
                "outbox_event_p202702", "outbox_event_p202703");
        assertThat(PartitionBounds.instantOf(ranges.get(2).to())).isEqualTo(Instant.parse("2027-03-01T00:00:00Z"));
    }

    @Test
    void an_instant_exactly_on_a_bound_belongs_to_the_period_that_starts_there() {
        Instant midnight = Instant.parse("2026-12-01T00:00:00Z");
        Range current = PartitionBounds.currentAndAhead("t", OutboxPartitioning.daily(), midnight).get(0);
        assertThat(current.name()).isEqualTo("t_p20261201");
        assertThat(current.from()).isEqualTo(PartitionBounds.bound(midnight));
        Range before = PartitionBounds.currentAndAhead("t", OutboxPartitioning.daily(), midnight.minusMillis(1))
                .get(0);
        assertThat(before.name()).isEqualTo("t_p20261130");
        assertThat(before.to()).isEqualTo(PartitionBounds.bound(midnight));
    }

    @Test
    void weeks_start_on_monday_and_ahead_counts_after_the_current_one() {
        List<Range> ranges = PartitionBounds.currentAndAhead("t", OutboxPartitioning.weekly(), T); // a Monday
        assertThat(ranges).hasSize(1 + 4);
        assertThat(ranges.get(0).start()).isEqualTo(Instant.parse("2026-11-30T00:00:00Z"));
        assertThat(PartitionBounds.currentAndAhead("t", OutboxPartitioning.weekly(),
                Instant.parse("2026-12-06T23:59:59Z")).get(0).name()).isEqualTo("t_p20261130");
    }

    @Test
    void ranges_overlap_only_when_they_share_an_id_and_open_ends_reach_everything() {
        UUID d1 = PartitionBounds.bound(Instant.parse("2026-12-01T00:00:00Z"));
        UUID d2 = PartitionBounds.bound(Instant.parse("2026-12-02T00:00:00Z"));
        UUID d3 = PartitionBounds.bound(Instant.parse("2026-12-03T00:00:00Z"));
        assertThat(PartitionBounds.overlaps(d1, d2, d2, d3)).isFalse(); // the upper bound is exclusive
        assertThat(PartitionBounds.overlaps(d2, d3, d1, d2)).isFalse();
        assertThat(PartitionBounds.overlaps(d1, d3, d2, d3)).isTrue();
        assertThat(PartitionBounds.overlaps(null, d2, d1, d2)).isTrue(); // MINVALUE: the legacy partition
        assertThat(PartitionBounds.overlaps(null, d2, d2, d3)).isFalse();
        assertThat(PartitionBounds.overlaps(d2, null, d2, d3)).isTrue(); // MAXVALUE
    }

    @Test
    void a_partition_has_expired_when_its_whole_range_ended_at_or_before_the_cutoff() {
        Instant cutoff = Instant.parse("2026-12-01T00:00:00Z");
        assertThat(PartitionBounds.endedBy(PartitionBounds.bound(cutoff), cutoff)).isTrue(); // exactly on the edge
        assertThat(PartitionBounds.endedBy(PartitionBounds.bound(cutoff.minusMillis(1)), cutoff)).isTrue();
        assertThat(PartitionBounds.endedBy(PartitionBounds.bound(cutoff.plusMillis(1)), cutoff)).isFalse();
        assertThat(PartitionBounds.endedBy(null, cutoff)).isFalse(); // up to MAXVALUE never ends
    }

    @Test
    void a_partition_record_expires_and_overlaps_by_its_range_and_the_default_one_never() {
        Instant cutoff = Instant.parse("2026-12-01T00:00:00Z");
        PartitionedOutbox.Partition legacy = new PartitionedOutbox.Partition("t_legacy", null,
                PartitionBounds.bound(cutoff), false);
        PartitionedOutbox.Partition fallback = new PartitionedOutbox.Partition("t_default", null, null, true);
        assertThat(legacy.endedBy(cutoff)).isTrue();
        assertThat(fallback.endedBy(cutoff)).isFalse();
        assertThat(fallback.overlaps(PartitionBounds.bound(cutoff), PartitionBounds.bound(cutoff.plusSeconds(1))))
                .isFalse();
    }

    @Test
    void the_conversion_bound_is_the_start_of_a_period_at_least_the_margin_ahead() {
        OutboxPartitioning daily = OutboxPartitioning.daily();
        // 22:59 + 1 h is still the same day: the bound is the next midnight
        assertThat(PartitionBounds.instantOf(PartitionBounds.conversionBound(daily,
                Instant.parse("2026-11-30T22:59:00Z")))).isEqualTo(Instant.parse("2026-12-01T00:00:00Z"));
        // 23:00 + 1 h is the next day already: the bound moves a day further
        assertThat(PartitionBounds.instantOf(PartitionBounds.conversionBound(daily,
                Instant.parse("2026-11-30T23:00:00Z")))).isEqualTo(Instant.parse("2026-12-02T00:00:00Z"));
        assertThat(PartitionBounds.instantOf(PartitionBounds.conversionBound(OutboxPartitioning.monthly(), T)))
                .isEqualTo(Instant.parse("2026-12-01T00:00:00Z"));
    }

    @Test
    void a_stopped_conversion_moves_its_bound_when_it_is_within_the_margin_or_unknown() {
        UUID bound = PartitionBounds.bound(Instant.parse("2026-12-01T00:00:00Z"));
        assertThat(PartitionBounds.tooNear(bound, Instant.parse("2026-11-30T22:59:59.999Z"))).isFalse();
        assertThat(PartitionBounds.tooNear(bound, Instant.parse("2026-11-30T23:00:00Z"))).isTrue(); // on the edge
        assertThat(PartitionBounds.tooNear(bound, Instant.parse("2026-12-02T00:00:00Z"))).isTrue();
        assertThat(PartitionBounds.tooNear(null, T)).isTrue();
    }

    @Test
    void parses_the_bounds_postgresql_prints() {
        UUID d1 = PartitionBounds.bound(Instant.parse("2026-12-01T00:00:00Z"));
        UUID d2 = PartitionBounds.bound(Instant.parse("2026-12-02T00:00:00Z"));
        assertThat(PartitionCatalog.parse("p", "FOR VALUES FROM ('" + d1 + "') TO ('" + d2 + "')"))
                .isEqualTo(new PartitionedOutbox.Partition("p", d1, d2, false));
        assertThat(PartitionCatalog.parse("l", "FOR VALUES FROM (MINVALUE) TO ('" + d1 + "')").from()).isNull();
        assertThat(PartitionCatalog.parse("d", "DEFAULT").isDefault()).isTrue();
    }
}
