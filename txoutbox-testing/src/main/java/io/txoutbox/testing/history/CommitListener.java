package io.txoutbox.testing.history;

import java.time.Instant;
import java.util.List;

/**
 * Told about every committed writer transaction right after {@code commit()} returned, on the writer's thread (keep
 * it fast). Meant for commit-to-delivery latency.
 */
@FunctionalInterface
public interface CommitListener {

    void committed(Commit commit);

    /**
     * One committed transaction.
     *
     * @param writer             index of the writer thread (0-based)
     * @param events             the events of the transaction, in insert order
     * @param intendedStartNanos when the transaction was due ({@link System#nanoTime()}); with a target rate this is
     *                           its slot in the open-loop schedule, so latency measured from it includes queueing
     *                           (no coordinated omission); without a rate it equals {@code startNanos}
     * @param startNanos         when the transaction's first statement was sent
     * @param commitReturnNanos  when {@code commit()} returned ({@link System#nanoTime()})
     * @param commitReturnWall   the same moment on the wall clock
     */
    record Commit(int writer, List<LedgerEntry> events, long intendedStartNanos, long startNanos,
                  long commitReturnNanos, Instant commitReturnWall) {
    }
}
