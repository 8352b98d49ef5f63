package io.txoutbox.internal.inbox;

import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;

/** The inbox worker's counters, shared by its lanes. */
final class InboxCounters {
    final LongAdder processed = new LongAdder();
    final LongAdder failedAttempts = new LongAdder();
    final LongAdder parked = new LongAdder();
    final LongAdder dead = new LongAdder();
    final LongAdder batches = new LongAdder();
    final LongAdder loopErrors = new LongAdder();
    final AtomicInteger lanesOwned = new AtomicInteger();
}
