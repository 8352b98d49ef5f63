package io.txoutbox.internal.progress;

import io.txoutbox.internal.Defects;
import io.txoutbox.internal.Misconfigured;
import io.txoutbox.OutboxSchema;
import io.txoutbox.internal.BackendCheck;
import io.txoutbox.internal.pg.EventState;
import io.txoutbox.internal.pg.Jdbc;
import io.txoutbox.internal.pg.RelayStatements;
import io.txoutbox.spi.OutboxRecord;
import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;

/**
 * Today's progress model: a row stays in the outbox table and its {@code state} says where it is — {@code PENDING}
 * until the mark sets it {@code PUBLISHED} with {@code published_at}, one UPDATE per row; failures update the row in
 * place ({@link RowStateStatements}). Retention deletes published rows later.
 */
final class RowStateProgress implements ProgressModel {

    private final OutboxSchema schema;
    private final RowStateStatements sql;

    RowStateProgress(OutboxSchema schema) {
        this.schema = schema;
        this.sql = new RowStateStatements(schema);
    }

    @Override
    public OutboxSchema schema() {
        return schema;
    }

    @Override
    public Lane lane(int index, int lanes, Integer[] shards) {
        return new RowStateLane(new ClaimFloor(schema.qualifiedOutboxTable()));
    }

    @Override
    public Release releaseParked() {
        return new Release(sql.releaseNext(), false);
    }

    /** A lane's claim floor (reset on every (re)acquisition), and the statements, the same for every lane. */
    private final class RowStateLane implements Lane {

        private final ClaimFloor floor;
        private boolean checked;

        RowStateLane(ClaimFloor floor) {
            this.floor = floor;
        }

        @Override
        public void reset() {
            floor.reset();
            checked = false;
        }

        @Override
        public Claim claim(Connection c, ClaimRequest r) throws SQLException {
            if (!checked) {
                // after every acquisition: another instance may have run on the cursor model meanwhile
                boolean cursors = ProgressConversion.hasCursors(c, schema);
                c.commit();
                if (cursors) {
                    throw new Misconfigured(schema + " has relay cursors: its relays ran with schema.progress=CURSOR,"
                            + " and this one runs with ROW_STATE, which would send every event the cursors published "
                            + "again. Run every relay of the table with the same schema.progress, or, to go back to "
                            + "ROW_STATE, stop them and run OutboxSchema.convertProgressToRowState first");
                }
                checked = true;
            }
            return RowStateProgress.this.claim(c, r, floor);
        }

        @Override
        public void markStarts(Connection c) throws SQLException {
            RowStateProgress.this.markStarts(c);
        }

        @Override
        public int delivered(Connection c, Long[] ids, BackendCheck owner) throws SQLException {
            return RowStateProgress.this.delivered(c, ids, owner);
        }

        @Override
        public void failed(Connection c, FailureUpdate u, BackendCheck owner) throws SQLException {
            RowStateProgress.this.failed(c, u, owner);
        }
    }

    Claim claim(Connection c, ClaimRequest r, ClaimFloor floor) throws SQLException {
        long from = floor.beforeClaim(c);
        // the lowest id of a backing-off row of the lane, keyed or not (-1: none): one short read of a small index,
        // whatever the number of parked keys (RowStateStatements#waiting). Only a claim that moves the floor uses it
        // (ClaimFloor#afterClaim), at most one every CHECK_MILLIS: the others save the round trip
        long firstWaiting = floor.settled() < 0 ? -1
                : Jdbc.queryLong(c, sql.waiting(), c.createArrayOf("integer", r.shards())).orElse(-1);
        List<OutboxRecord> batch = new ArrayList<>(r.limit());
        long claimedAtNanos;
        String claim = r.commitTimestamps() ? sql.claimWithCommitTime() : sql.claim();
        if (Defects.active(Defects.Defect.PER_ROW_BACKOFF) || Defects.active(Defects.Defect.CLAIM_FORGETS_WAITING_KEY)) {
            claim = sql.claimWithDefect(!Defects.active(Defects.Defect.CLAIM_FORGETS_WAITING_KEY),
                    !Defects.active(Defects.Defect.PER_ROW_BACKOFF));
        }
        try (PreparedStatement ps = c.prepareStatement(claim)) {
            Array lane = c.createArrayOf("integer", r.shards());
            ps.setLong(1, from);
            ps.setArray(2, lane);
            ps.setArray(3, lane);
            ps.setInt(4, r.limit());
            // fetched in chunks (the connection is in a transaction), so a batch of large events can stop early
            ps.setFetchSize(Math.min(r.limit(), 250));
            long batchBytes = 0;
            try (ResultSet rs = ps.executeQuery()) {
                claimedAtNanos = System.nanoTime();
                while (batchBytes < r.maxBytes() && rs.next()) {
                    r.ageMicros()[batch.size()] = rs.getLong(14);
                    OutboxRecord record = OutboxRows.record(rs);
                    batch.add(record);
                    batchBytes += record.valueSize();
                }
            }
        }
        c.commit();
        floor.afterClaim(batch.isEmpty() ? -1 : batch.get(0).id(), firstWaiting);
        return new Claim(batch, claimedAtNanos);
    }

    /** A partitioned table plans the mark generically ({@link RelayStatements#GENERIC_PLANS}). */
    void markStarts(Connection c) throws SQLException {
        if (schema.isPartitioned()) {
            try (Statement st = c.createStatement()) {
                st.execute(RelayStatements.GENERIC_PLANS);
            }
        }
    }

    int delivered(Connection c, Long[] ids, BackendCheck owner) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(owner.guard(sql.markPublished()))) {
            ps.setArray(1, c.createArrayOf("bigint", ids));
            return ps.executeUpdate();
        }
    }

    void failed(Connection c, FailureUpdate u, BackendCheck owner) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(owner.guard(sql.recordFailures()))) {
            ps.setArray(1, c.createArrayOf("bigint", u.ids()));
            ps.setArray(2, c.createArrayOf("text", u.errors()));
            ps.setArray(3, c.createArrayOf("bigint", u.delaysMs()));
            ps.setArray(4, c.createArrayOf("text", u.states()));
            ps.setArray(5, c.createArrayOf("integer", u.addAttempts()));
            ps.executeUpdate();
        }
    }

    @Override
    public String pending(String alias) {
        return column(alias, "state") + " = " + EventState.PENDING.sql();
    }

    @Override
    public String published(String alias) {
        return column(alias, "state") + " = " + EventState.PUBLISHED.sql();
    }

    @Override
    public String publishedAt(String alias) {
        return column(alias, "published_at");
    }

    private static String column(String alias, String column) {
        return alias == null ? column : alias + "." + column;
    }
}
