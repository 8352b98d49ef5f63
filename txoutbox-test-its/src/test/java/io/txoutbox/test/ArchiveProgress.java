package io.txoutbox.test;

import io.txoutbox.OutboxSchema;
import io.txoutbox.internal.BackendCheck;
import io.txoutbox.internal.progress.ProgressModel;
import io.txoutbox.internal.progress.ProgressModels;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;

/**
 * A second progress model, to prove the seam: the mark moves a delivered row out of the outbox table into an archive
 * table (created by the test as {@code LIKE} the outbox table) in one statement, so the outbox holds only rows that
 * are still to be published or have failed. Claim, failure record and the pending predicate are today's
 * ({@link ProgressModels#rowState}); a published row is no longer in the outbox table, so retention there finds none.
 */
final class ArchiveProgress implements ProgressModel {

    private final ProgressModel rows;
    private final String moveDelivered;

    /** {@code archive}: the quoted, qualified archive table. */
    ArchiveProgress(OutboxSchema schema, String archive) {
        this.rows = ProgressModels.rowState(schema);
        // %3$s: the lane's proof of ownership, inside the DELETE that chooses the rows (see BackendCheck#condition)
        this.moveDelivered = """
                WITH moved AS (DELETE FROM %1$s WHERE id = ANY(?) AND state = 'PENDING' AND %3$s RETURNING *) \
                INSERT INTO %2$s SELECT * FROM moved""".formatted(schema.qualifiedOutboxTable(), archive, "%s");
    }

    @Override
    public OutboxSchema schema() {
        return rows.schema();
    }

    /** Today's lane (claim floor, claim, failure record), with the mark of delivered rows replaced. */
    @Override
    public Lane lane(int index, int lanes, Integer[] shards) {
        Lane today = rows.lane(index, lanes, shards);
        return new Lane() {
            @Override
            public void reset() {
                today.reset();
            }

            @Override
            public Claim claim(Connection lane, ClaimRequest request) throws SQLException {
                return today.claim(lane, request);
            }

            @Override
            public void markStarts(Connection lane) throws SQLException {
                today.markStarts(lane);
            }

            @Override
            public int delivered(Connection lane, Long[] ids, BackendCheck owner) throws SQLException {
                try (PreparedStatement ps = lane.prepareStatement(moveDelivered.formatted(owner.condition()))) {
                    ps.setArray(1, lane.createArrayOf("bigint", ids));
                    return ps.executeUpdate();
                }
            }

            @Override
            public void failed(Connection lane, FailureUpdate update, BackendCheck owner) throws SQLException {
                today.failed(lane, update, owner);
            }
        };
    }

    @Override
    public Release releaseParked() {
        return rows.releaseParked();
    }

    @Override
    public String pending(String alias) {
        return rows.pending(alias);
    }

    @Override
    public String published(String alias) {
        return "false";
    }

    @Override
    public String publishedAt(String alias) {
        return rows.publishedAt(alias);
    }
}
