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
 * <p><b>Where a component gets its model.</b> From {@link ProgressModels#of}, the one place: today's model
 * ({@link RowStateProgress}, one UPDATE per row) for every table. A test may put another model behind a table with
 * {@link ProgressModels#use} (an internal seam, not a public API): every relay and reader built for that
 * table while it is in use takes it.
 */
public interface ProgressModel {

    /** The outbox table this model records progress for. */
    OutboxSchema schema();

    /**
     * Claims the lane's next batch in one READ COMMITTED transaction on {@code lane} and commits it: the floor's
     * settlement check ({@link ClaimFloor#beforeClaim}), the lowest backing-off row of the lane, the claim from the
     * floor, then the floor moved ({@link ClaimFloor#afterClaim}). The caller rolls back if it throws.
     */
    Claim claim(Connection lane, ClaimRequest request) throws SQLException;

    /** The first statements of the mark transaction, before {@link #delivered} and {@link #failed} (not committed). */
    void markStarts(Connection lane) throws SQLException;

    /**
     * Records delivered rows as published, only those still pending, in the mark transaction (not committed); returns
     * how many it recorded (fewer: an operator changed the others meanwhile).
     */
    int delivered(Connection lane, Long[] ids, BackendCheck owner) throws SQLException;

    /** Records the failed heads of a batch as planned, only rows still pending, in the mark transaction. */
    void failed(Connection lane, FailureUpdate update, BackendCheck owner) throws SQLException;

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
     * What a lane asks of a claim: its floor (kept per lane, reset on every (re)acquisition), its shards, at most
     * {@code limit} rows and, past the first, {@code maxBytes} of values; {@code commitTimestamps}: the server tracks
     * them. {@code ageMicros[i]} receives claimed row i's commit→ack age at the claim.
     */
    record ClaimRequest(ClaimFloor floor, Integer[] shards, int limit, long maxBytes, boolean commitTimestamps,
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
