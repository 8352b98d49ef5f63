package io.txoutbox.internal.relay;

import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;

/** The relay's counters, shared by its lanes. */
final class RelayCounters {
    final LongAdder published = new LongAdder();
    final LongAdder failedAttempts = new LongAdder();
    final LongAdder unavailable = new LongAdder();
    final LongAdder collateral = new LongAdder();
    final LongAdder parked = new LongAdder();
    final LongAdder dead = new LongAdder();
    final LongAdder batches = new LongAdder();
    final LongAdder outages = new LongAdder();
    final LongAdder loopErrors = new LongAdder();
    final LongAdder contractBreaks = new LongAdder();
    final LongAdder fencedMarks = new LongAdder();
    /** Marks tried again after a failure other than a lost session (the lane kept its lease and its batch). */
    final LongAdder markRetries = new LongAdder();
    /** Lanes owned plus lanes reserved by a lane that is trying its lock: the fair-share budget in use. */
    final AtomicInteger lanesReserved = new AtomicInteger();
}
