package io.txoutbox;

import io.txoutbox.internal.config.Checks;
import java.time.DayOfWeek;
import java.time.Instant;
import java.time.LocalDate;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.time.temporal.ChronoUnit;
import java.time.temporal.TemporalAdjusters;

/**
 * A time-partitioned outbox table: the table is {@code PARTITION BY RANGE (event_id)}, one partition per period of
 * UTC time (UUIDv7 event ids begin with their creation time in milliseconds, so a range of ids is a range of time),
 * and retention drops whole old partitions instead of deleting rows: no DELETE, no bloat, no vacuum debt.
 *
 * <pre>{@code
 * OutboxSchema schema = OutboxSchema.builder().partitioned(OutboxPartitioning.daily()).build();
 * schema.migrate(dataSource);   // creates the table partitioned, or converts an existing one (see docs/partitioning.md)
 * OutboxRetention.builder().dataSource(dataSource).schema(schema)
 *         .retention(Duration.ofDays(7)).build().start();   // creates partitions ahead, drops expired ones
 * }</pre>
 *
 * <p>Partitions are named {@code <table>_p<start>} ({@code outbox_event_p20261130}, {@code outbox_event_p202611}
 * for months); a {@code <table>_default} partition takes rows no period covers (when partitions were not created
 * ahead in time, or an event id is not a current UUIDv7), so a write never fails for want of a partition.
 *
 * @param period the time one partition covers
 * @param ahead  how many partitions after the current one are kept created, so writes never reach a missing one
 *               even if retention does not run for that long (at least 1)
 */
public record OutboxPartitioning(Period period, int ahead) {

    /** Most partitions created ahead. */
    public static final int MAX_AHEAD = 366;

    public OutboxPartitioning {
        if (period == null) {
            throw Checks.invalid("schema.partitioning.period", "must be set (DAY, WEEK or MONTH)");
        }
        Checks.between("schema.partitioning.ahead", ahead, 1, MAX_AHEAD);
    }

    /** One partition per UTC day, 7 created ahead. */
    public static OutboxPartitioning daily() {
        return new OutboxPartitioning(Period.DAY, 7);
    }

    /** One partition per ISO week (from Monday 00:00 UTC), 4 created ahead. */
    public static OutboxPartitioning weekly() {
        return new OutboxPartitioning(Period.WEEK, 4);
    }

    /** One partition per UTC calendar month, 2 created ahead. */
    public static OutboxPartitioning monthly() {
        return new OutboxPartitioning(Period.MONTH, 2);
    }

    /** The same period with {@code ahead} partitions created after the current one. */
    public OutboxPartitioning ahead(int ahead) {
        return new OutboxPartitioning(period, ahead);
    }

    /** The time one partition covers; boundaries are UTC. */
    public enum Period {
        DAY(DateTimeFormatter.ofPattern("yyyyMMdd")),
        WEEK(DateTimeFormatter.ofPattern("yyyyMMdd")),
        MONTH(DateTimeFormatter.ofPattern("yyyyMM"));

        private final DateTimeFormatter suffix;

        Period(DateTimeFormatter suffix) {
            this.suffix = suffix;
        }

        /** The start of the period that contains {@code t}. */
        public Instant startOf(Instant t) {
            LocalDate day = t.atZone(ZoneOffset.UTC).toLocalDate();
            LocalDate start = switch (this) {
                case DAY -> day;
                case WEEK -> day.with(TemporalAdjusters.previousOrSame(DayOfWeek.MONDAY));
                case MONTH -> day.withDayOfMonth(1);
            };
            return start.atStartOfDay(ZoneOffset.UTC).toInstant();
        }

        /** The start of the period after the one that starts at {@code start}. */
        public Instant next(Instant start) {
            LocalDate day = start.atZone(ZoneOffset.UTC).toLocalDate();
            LocalDate next = switch (this) {
                case DAY -> day.plusDays(1);
                case WEEK -> day.plusWeeks(1);
                case MONTH -> day.plus(1, ChronoUnit.MONTHS);
            };
            return next.atStartOfDay(ZoneOffset.UTC).toInstant();
        }

        /** The partition name's suffix for the period starting at {@code start}, e.g. {@code _p20261130}. */
        public String suffix(Instant start) {
            return "_p" + suffix.format(start.atZone(ZoneOffset.UTC));
        }
    }
}
