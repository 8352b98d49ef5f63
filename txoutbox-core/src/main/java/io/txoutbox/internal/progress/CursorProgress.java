package io.txoutbox.internal.progress;

import io.txoutbox.OutboxSchema;
import io.txoutbox.internal.BackendCheck;
import io.txoutbox.internal.pg.EventState;
import io.txoutbox.spi.OutboxRecord;
import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The cursor progress model (docs/progress-models.md): a lane records how far its shards are settled — one HOT
 * update of its row in {@code <outbox>_progress} per settlement — instead of one UPDATE per delivered row. A
 * delivered row that never failed is not written again; the outbox table is append-only on the happy path. Rows
 * that leave it are written as in the row-state model (backoff, PARKED, DEAD; PUBLISHED for a delivered retry), and
 * rows the cursor passes while their key waits become {@code HELD}.
 *
 * <p><b>Why the cursor is safe.</b> It moves only up to an id {@code S} the claim floor's settlement proved
 * ({@link ClaimFloor}: every row with id at or below it is committed or gone, and a later statement sees them all),
 * and only once every row of the lane's shards up to it still looking fresh is one the lane delivered (the gap
 * check): a late committer — a row with an id below the lane's high-water mark that became visible after the claim
 * passed it — is claimed by id first. Every row the lane did not deliver is recorded before the cursor passes it
 * (failed, held, or due), in the batch's mark or in the claim's transaction.
 *
 * <p>After a crash or a takeover the lane's next owner starts at the cursor, so the events delivered above it since
 * the last settlement (about {@value ClaimFloor#CHECK_MILLIS}–{@code 2 ×} that many milliseconds of them) go out
 * again: at least once, as always.
 */
final class CursorProgress implements ProgressModel {

    private static final Logger log = LoggerFactory.getLogger(CursorProgress.class);
    /** The longest a lane that lets its session go waits for a settlement to record its last deliveries. */
    static final long LET_GO_MILLIS = 1_000;

    private final OutboxSchema schema;
    private final CursorStatements sql;
    /** The row-state model, for what both record alike: the failure record, the mark's plan mode. */
    private final RowStateProgress rows;

    CursorProgress(OutboxSchema schema) {
        this.schema = schema;
        this.sql = new CursorStatements(schema);
        this.rows = new RowStateProgress(schema);
    }

    @Override
    public OutboxSchema schema() {
        return schema;
    }

    @Override
    public Lane lane(int index, int lanes, Integer[] shards) {
        return new CursorLane(lanes + ":" + index, shards);
    }

    @Override
    public Release releaseParked() {
        return new Release(sql.releaseHeldByEventIds(), true);
    }

    @Override
    public String pending(String alias) {
        return sql.pending(prefix(alias));
    }

    @Override
    public String published(String alias) {
        return sql.published(prefix(alias));
    }

    @Override
    public String publishedAt(String alias) {
        return sql.publishedAt(prefix(alias));
    }

    private static String prefix(String alias) {
        return alias == null ? "" : alias + ".";
    }

    /** A claimed row: its record, its commit age at the claim (µs), whether its key waits, whether a retry. */
    private record Row(OutboxRecord record, long ageMicros, boolean held, boolean retry) {
    }

    /** One lane's cursor, its high-water mark, and what it delivered above the cursor. */
    private final class CursorLane implements Lane {

        private final String name;
        private final Integer[] shards;
        private final ClaimFloor floor = new ClaimFloor(schema.qualifiedOutboxTable());
        /** Ids of the lane's fresh rows above the cursor that a committed mark recorded (delivered or failed). */
        private final TreeSet<Long> settledAbove = new TreeSet<>();
        private boolean started;
        /** Every row of the lane's shards at or below it is settled; the lane's progress row says so (or less). */
        private long cursor;
        /** The highest cursor of the lane's shards: below it, a shard's own cursor still filters the claim. */
        private long highestShardCursor;
        /** The highest id the lane's claims covered: every fresh row of its shards up to it was returned by one. */
        private long highWater;
        /** Where the cursor moves once the batch in flight is recorded (-1: it stays). */
        private long target = -1;
        /** The batch in flight: fresh ids, retry ids, and what its mark recorded. */
        private final List<Long> claimedFresh = new ArrayList<>();
        private final Set<Long> claimedRetries = new HashSet<>();
        private final Set<Long> recorded = new HashSet<>();
        private final List<Long> release = new ArrayList<>();

        CursorLane(String name, Integer[] shards) {
            this.name = name;
            this.shards = shards;
        }

        @Override
        public void reset() {
            floor.reset();
            started = false;
            settledAbove.clear();
            target = -1;
            clearBatch();
        }

        private void clearBatch() {
            claimedFresh.clear();
            claimedRetries.clear();
            recorded.clear();
            release.clear();
        }

        /** At the first claim after an acquisition: the cursor the lane starts from, its progress row made. */
        private void start(Connection c) throws SQLException {
            try (PreparedStatement ps = c.prepareStatement(sql.laneCursors())) {
                ps.setArray(1, c.createArrayOf("integer", shards));
                try (ResultSet rs = ps.executeQuery()) {
                    rs.next();
                    cursor = rs.getLong(1);
                    highestShardCursor = rs.getLong(2);
                }
            }
            try (PreparedStatement ps = c.prepareStatement(sql.insertLane())) {
                ps.setString(1, name);
                ps.setArray(2, c.createArrayOf("integer", shards));
                ps.setLong(3, cursor);
                ps.executeUpdate();
            }
            highWater = cursor;
            started = true;
            log.debug("txoutbox-relay lane {}: cursor {} (highest of its shards {})", name, cursor,
                    highestShardCursor);
        }

        @Override
        public Claim claim(Connection c, ClaimRequest r) throws SQLException {
            clearBatch();
            if (!started) {
                start(c);
            }
            floor.beforeClaim(c);
            long settled = floor.settled(); // a later statement (the claim) sees every row up to it
            floor.afterClaim(-1, -1);
            String ageSql = r.commitTimestamps() ? RowStateStatements.COMMIT_AGE_TRACKED
                    : RowStateStatements.COMMIT_AGE_UNTRACKED;
            Array lane = c.createArrayOf("integer", shards);
            int freshLimit = r.limit() + settledAbove.size(); // the delivered rows above the cursor come back too
            List<Row> rows = new ArrayList<>();
            List<Long> late = new ArrayList<>();
            int returned = 0;
            long claimedAtNanos;
            try (PreparedStatement ps = c.prepareStatement(sql.claim(cursor < highestShardCursor, ageSql))) {
                ps.setArray(1, lane); // the window: delivered rows and late committers, ids only
                ps.setLong(2, cursor);
                ps.setLong(3, highWater);
                ps.setArray(4, lane); // above the high-water mark, whole
                ps.setLong(5, highWater);
                ps.setInt(6, freshLimit);
                ps.setArray(7, lane); // due retries
                ps.setInt(8, r.limit());
                ps.setInt(9, freshLimit);
                ps.setFetchSize(Math.min(freshLimit, 500));
                try (ResultSet rs = ps.executeQuery()) {
                    claimedAtNanos = System.nanoTime();
                    while (rs.next()) {
                        returned++;
                        long id = rs.getLong(1);
                        boolean retry = rs.getBoolean(16);
                        if (!retry && id <= highWater) {
                            if (!settledAbove.contains(id)) {
                                late.add(id); // committed after a claim passed its id: read it whole below
                            }
                            continue;
                        }
                        rows.add(new Row(OutboxRows.record(rs), rs.getLong(14), rs.getBoolean(15), retry));
                    }
                }
            }
            if (!late.isEmpty()) {
                log.debug("txoutbox-relay lane {}: {} late committers below {}", name, late.size(), highWater);
                try (PreparedStatement ps = c.prepareStatement(sql.lateRows(ageSql))) {
                    ps.setArray(1, c.createArrayOf("bigint", late.toArray(new Long[0])));
                    try (ResultSet rs = ps.executeQuery()) {
                        while (rs.next()) {
                            rows.add(new Row(OutboxRows.record(rs), rs.getLong(14), rs.getBoolean(15), false));
                        }
                    }
                }
                rows.sort(Comparator.comparingLong(row -> row.record.id()));
            }
            // the batch: in id order, held rows apart, until the limit or the bytes
            boolean cut = returned >= freshLimit;
            List<OutboxRecord> batch = new ArrayList<>(r.limit());
            List<Long> held = new ArrayList<>();
            long covered = -1; // every fresh row of the lane's shards above the cursor up to it is in this claim
            long batchBytes = 0;
            for (Row row : rows) {
                if (batch.size() >= r.limit() || (!batch.isEmpty() && batchBytes >= r.maxBytes())) {
                    cut = true;
                    break;
                }
                long id = row.record.id();
                if (row.held) {
                    held.add(id);
                } else {
                    r.ageMicros()[batch.size()] = row.ageMicros;
                    batch.add(row.record);
                    batchBytes += row.record.valueSize();
                    (row.retry ? claimedRetries : claimedFresh).add(id);
                }
                if (!row.retry) {
                    covered = Math.max(covered, id);
                    highWater = Math.max(highWater, id);
                }
            }
            if (!held.isEmpty()) {
                holdOrMakeDue(c, r.owner(), held.toArray(new Long[0]));
            }
            // How far the cursor may move once this batch is recorded: up to the settled id, and, when the claim was
            // cut short, only as far as it read.
            target = settled <= cursor ? -1 : cut ? Math.min(settled, covered) : settled;
            if (batch.isEmpty()) {
                advance(c, r.owner()); // nothing to record: the claim's transaction moves the cursor
            }
            c.commit();
            if (batch.isEmpty()) {
                advanced();
            }
            return new Claim(batch, claimedAtNanos);
        }

        /** Moves the lane's progress row to {@link #target}, if the last claim set one above the cursor. */
        private void advance(Connection c, BackendCheck owner) throws SQLException {
            if (target <= cursor) {
                return;
            }
            try (PreparedStatement ps = c.prepareStatement(owner.guard(sql.advance()))) {
                ps.setLong(1, target);
                ps.setString(2, name);
                ps.setLong(3, target);
                ps.executeUpdate();
            }
        }

        /** The advance committed: the lane's cursor is the target, and what it delivered below is forgotten. */
        private void advanced() {
            if (target > cursor) {
                cursor = target;
                settledAbove.headSet(cursor, true).clear();
            }
            target = -1;
        }

        /**
         * Before the lane lets its session go: waits (at most {@value #LET_GO_MILLIS} ms) for a settlement, then moves
         * the cursor over what the lane delivered up to it — so a graceful close or hand-over sends nothing twice.
         */
        @Override
        public void letGo(Connection c, BackendCheck owner) throws SQLException {
            if (!started) {
                return;
            }
            long deadline = System.nanoTime() + LET_GO_MILLIS * 1_000_000;
            while (System.nanoTime() - deadline < 0) {
                floor.beforeClaim(c);
                long settled = floor.settled();
                floor.afterClaim(-1, -1);
                if (settled > cursor) {
                    long to = settled;
                    boolean undelivered = false;
                    try (PreparedStatement ps = c.prepareStatement(sql.freshIds(cursor < highestShardCursor))) {
                        ps.setArray(1, c.createArrayOf("integer", shards));
                        ps.setLong(2, cursor);
                        ps.setLong(3, settled);
                        try (ResultSet rs = ps.executeQuery()) {
                            while (rs.next()) {
                                long id = rs.getLong(1);
                                if (!settledAbove.contains(id)) {
                                    to = id - 1; // not delivered by this lane: its next owner sends it
                                    undelivered = true;
                                    break;
                                }
                            }
                        }
                    }
                    target = to;
                    advance(c, owner);
                    c.commit();
                    log.debug("txoutbox-relay lane {}: letting go, cursor {} (settled {}, was {}, delivered up to {})",
                            name, to, settled, cursor, highWater);
                    advanced();
                    if (undelivered || cursor >= highWater) {
                        return;
                    }
                    continue; // delivered rows above the settlement: wait for the next one
                }
                c.commit();
                if (System.nanoTime() - deadline >= 0) {
                    log.debug("txoutbox-relay lane {}: no settlement within {} ms; lets go at cursor {}", name,
                            LET_GO_MILLIS, cursor);
                }
                try {
                    Thread.sleep(ClaimFloor.CHECK_MILLIS / 2);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return;
                }
            }
        }

        /** Rows whose key waits: HELD if it still does, else due now (an operator released the key meanwhile). */
        private void holdOrMakeDue(Connection c, BackendCheck owner, Long[] ids) throws SQLException {
            Array array = c.createArrayOf("bigint", ids);
            try (PreparedStatement ps = c.prepareStatement(owner.guard(sql.hold()))) {
                ps.setArray(1, array);
                ps.executeUpdate();
            }
            try (PreparedStatement ps = c.prepareStatement(owner.guard(sql.due()))) {
                ps.setArray(1, array);
                ps.executeUpdate();
            }
        }

        @Override
        public void markStarts(Connection c) throws SQLException {
            rows.markStarts(c);
        }

        /** Fresh rows: nothing to write (the cursor will pass them). Retries: PUBLISHED, and their keys released. */
        @Override
        public int delivered(Connection c, Long[] ids, BackendCheck owner) throws SQLException {
            List<Long> retries = new ArrayList<>();
            int fresh = 0;
            for (Long id : ids) {
                recorded.add(id);
                if (claimedRetries.contains(id)) {
                    retries.add(id);
                } else {
                    fresh++;
                }
            }
            if (retries.isEmpty()) {
                return fresh;
            }
            Array array = c.createArrayOf("bigint", retries.toArray(new Long[0]));
            int published;
            try (PreparedStatement ps = c.prepareStatement(owner.guard(sql.publishRetries()))) {
                ps.setArray(1, array);
                published = ps.executeUpdate();
            }
            release.addAll(retries);
            return fresh + published;
        }

        @Override
        public void failed(Connection c, FailureUpdate u, BackendCheck owner) throws SQLException {
            rows.failed(c, u, owner);
            for (int i = 0; i < u.ids().length; i++) {
                recorded.add(u.ids()[i]);
                if (EventState.DEAD.name().equals(u.states()[i])) {
                    release.add(u.ids()[i]); // dead-lettered: its key moves on
                }
            }
        }

        /**
         * The batch's fresh rows neither delivered nor failed (held back behind a failed row of their key): HELD, or
         * due when their key no longer waits; then the keys of delivered retries and dead heads released.
         */
        @Override
        public void markEnds(Connection c, BackendCheck owner) throws SQLException {
            List<Long> collateral = new ArrayList<>();
            for (Long id : claimedFresh) {
                if (!recorded.contains(id)) {
                    collateral.add(id);
                }
            }
            if (!collateral.isEmpty()) {
                holdOrMakeDue(c, owner, collateral.toArray(new Long[0]));
            }
            if (!release.isEmpty()) {
                try (PreparedStatement ps = c.prepareStatement(owner.guard(sql.releaseHeldByIds()))) {
                    ps.setArray(1, c.createArrayOf("bigint", release.toArray(new Long[0])));
                    ps.executeUpdate();
                }
            }
            advance(c, owner);
        }

        /** The batch is recorded: its fresh rows are settled for the gap check. */
        @Override
        public void markCommitted() {
            settledAbove.addAll(claimedFresh);
            advanced();
            clearBatch();
        }
    }
}
