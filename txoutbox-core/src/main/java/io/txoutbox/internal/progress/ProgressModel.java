package io.txoutbox.internal.progress;

import io.txoutbox.OutboxSchema;
import io.txoutbox.internal.BackendCheck;
import io.txoutbox.spi.OutboxRecord;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.List;

/**
 * What "published" means for one outbox table, behind one seam: the relay's claim (behind its claim floor), the mark
 * of a batch's delivered rows, the failure record the {@code FailurePlanner} decided, and the predicates and columns
 * the readers (status, retention, replay, admin) use to tell pending and published rows apart.
 *
 * <p><b>Sessions.</b> Every method that touches the database takes the lane's session, a {@link Connection} its caller
 * owns and keeps (autocommit off, READ COMMITTED, holding the lane's advisory lock), never a {@code DataSource}:
 * fencing is the session — a zombie lane's mark fails because PostgreSQL ended the session that held its lock — and the
 * statements that change rows carry the lane's proof of ownership ({@link BackendCheck}) in their WHERE.
 *
 * <p><b>Lanes.</b> The relay asks the model for one {@link Lane} per relay lane ({@link #lane}): what a model keeps
 * about a lane between its batches (the claim floor; the cursor model's cursor) lives there, and is forgotten when
 * the lane is (re)acquired ({@link Lane#reset}).
 *
 * <p><b>Where a component gets its model.</b> From {@link ProgressModels#of}, the one place: today's model
 * ({@link RowStateProgress}, one UPDATE per row) for every table. A test may put another model behind a table with
 * {@link ProgressModels#use} (an internal seam, not a public API): every relay and reader built for that
 * table while it is in use takes it.
 */
public interface ProgressModel {

    /** The outbox table this model records progress for. */
    OutboxSchema schema();

    /**
     * The progress of one relay lane, lane {@code index} of {@code lanes} working {@code shards}; one per lane object,
     * used only by the lane's thread.
     */
    Lane lane(int index, int lanes, Integer[] shards);

    /** What a model keeps and does for one relay lane, on the lane's session. */
    interface Lane {

        /** Forget what was kept: the lane was (re)acquired, or let its session go. */
        void reset();

        /**
         * Claims the lane's next batch in one READ COMMITTED transaction on {@code lane} and commits it. The caller
         * rolls back if it throws.
         */
        Claim claim(Connection lane, ClaimRequest request) throws SQLException;

        /** The first statements of the mark transaction, before {@link #delivered} and {@link #failed} (not committed). */
        void markStarts(Connection lane) throws SQLException;

        /**
         * Records delivered rows as published, only those still pending, in the mark transaction (not committed);
         * returns how many it recorded (fewer: an operator changed the others meanwhile).
         */
        int delivered(Connection lane, Long[] ids, BackendCheck owner) throws SQLException;

        /** Records the failed heads of a batch as planned, only rows still pending, in the mark transaction. */
        void failed(Connection lane, FailureUpdate update, BackendCheck owner) throws SQLException;

        /**
         * The last statements of the mark transaction, after {@link #delivered} and {@link #failed} (not committed):
         * what the model records about the rest of the claimed batch.
         */
        default void markEnds(Connection lane, BackendCheck owner) throws SQLException {
        }

        /** The mark transaction committed. */
        default void markCommitted() {
        }

        /**
         * The lane is about to let its session go on purpose (the relay closes, or hands the lane to another
         * instance), no batch in flight: record what is left to record, so the next owner does not send it again.
         * Bounded in time; commits what it writes.
         */
        default void letGo(Connection lane, BackendCheck owner) throws SQLException {
        }
    }

    /**
     * The statement an operator's skip or discard runs for the parked heads it releases (bind: their event ids, a
     * uuid array), and whether it runs after the change of their state ({@code true}) or before.
     */
    Release releaseParked();

    /** A statement of {@link #releaseParked}. */
    record Release(String sql, boolean afterChange) {
    }

    /**
     * The SQL predicate of a pending row, over {@code alias}'s columns ({@code null}: unqualified), with the state a
     * quoted literal so that the pending partial index is used under generic plans.
     */
    String pending(String alias);

    /** The SQL predicate of a published row in the outbox table (retention deletes such rows, replay sends them). */
    String published(String alias);

    /** The column that says when a published row was published, for retention's cutoff. */
    String publishedAt(String alias);

    /**
     * What a lane asks of a claim: its shards, its proof of ownership for what the claim's transaction writes, at most
     * {@code limit} rows and, past the first, {@code maxBytes} of values; {@code commitTimestamps}: the server tracks
     * them. {@code ageMicros[i]} receives claimed row i's commit→ack age at the claim.
     */
    record ClaimRequest(Integer[] shards, BackendCheck owner, int limit, long maxBytes, boolean commitTimestamps,
            long[] ageMicros) {
    }

    /** The claimed rows in id order, and when the claim's rows started to arrive ({@link System#nanoTime}). */
    record Claim(List<OutboxRecord> records, long claimedAtNanos) {
    }

    /**
     * One entry per failed head, the columns of the failure record in the arrays' order: id, error, backoff (ms),
     * new state (an {@link io.txoutbox.internal.pg.EventState} name), attempts to add.
     */
    record FailureUpdate(Long[] ids, String[] errors, Long[] delaysMs, String[] states, Integer[] addAttempts) {
    }
}
