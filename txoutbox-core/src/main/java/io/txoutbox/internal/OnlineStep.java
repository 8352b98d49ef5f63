package io.txoutbox.internal;

import io.txoutbox.OutboxSchema;
import java.sql.Connection;
import java.sql.SQLException;

/**
 * Work of a schema version that must not run in the scripts' transaction because it scans or rewrites rows of a
 * live table (validating a NOT VALID constraint, backfilling a column in batches). {@link SchemaMigrator} runs the
 * steps of every applied version after that transaction has committed, on every migrate, in version order.
 *
 * <p>A step must be:
 * <ul>
 *   <li><b>short-locked</b>: its own transactions (it commits them; the connection has autocommit off), none holding
 *       a lock writers wait for longer than a bounded time;</li>
 *   <li><b>idempotent and resumable</b>: it decides from the database what is left (catalog state, rows not yet
 *       done), never from a flag of its own, so a crash at any point leaves work the next migrate finishes;</li>
 *   <li><b>safe to race</b> with the same step of another migrate (the steps of one outbox table are serialised by a
 *       session advisory lock, but a step must not rely on it for correctness);</li>
 *   <li><b>cheap when done</b>: every migrate runs it again, so its first check is a catalog or index lookup.</li>
 * </ul>
 */
@FunctionalInterface
public interface OnlineStep {

    /**
     * Does what is left of the step.
     *
     * @return {@code null} when the step is complete, else one line for the log saying what is left, why and what to
     *     do (the next migrate tries again)
     */
    String run(Connection c, OutboxSchema schema) throws SQLException;
}
