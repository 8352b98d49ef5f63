package io.txoutbox.internal.progress;

import io.txoutbox.internal.Defects;
import io.txoutbox.internal.pg.IdSequence;
import io.txoutbox.internal.pg.RelayStatements;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Types;
import java.util.HashSet;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A lane's claim floor: an id below which the lane's shards hold no pending row, so the claim can start its index
 * scan there instead of walking the entries of every row published since the last vacuum (they stay in the pending
 * index until vacuum removes them, and each costs a heap visit until a scan finds it dead to all transactions — which
 * a transaction holding the xmin horizon delays for as long as it runs).
 *
 * <p><b>Why it is safe.</b> Ids are taken from the identity sequence when a row is inserted, but a row becomes
 * visible when its transaction commits, so a row with a low id can appear after higher ids were published. The floor
 * therefore only moves past ids that are <em>settled</em>: it reads the sequence's {@code last_value} L, then the
 * transactions holding a {@code RowExclusiveLock} on the outbox table. Every writer takes that lock (when its INSERT
 * is parsed or its plan is locked for execution) before it draws an id, so any transaction that may still commit a
 * row with an id at or below L is among them. Once none of them holds the lock
 * any more, every row up to L is committed or gone, and the next claim (a later statement, so a later snapshot) sees
 * all of them — a later statement has a later snapshot only under READ COMMITTED, which the lane's session is pinned
 * to ({@code LaneSession}); under REPEATABLE READ the claim would reuse the snapshot of the transaction's first
 * statement, taken before the lock read. The new floor is then the lowest of: L + 1, the first row that claim
 * returned, and the first row that backs off (PENDING with a {@code next_attempt_at}, keyed or not). A sequence with
 * a cache above 1 hands ids out of order, so then there is no floor.
 *
 * <p><b>Parked keys.</b> A parked row does not hold the floor back, so the floor passes a parked key's head and the
 * later events it holds back: one long-parked key, or 200,000 of them, cost the claim nothing. Rows that become
 * claimable again below the floor are the ones an operator releases; {@code OutboxAdmin} makes each such release due
 * with a {@code next_attempt_at} (a requeued row; after a skip or a discard, the key's next pending row), and every
 * claim starts at the lowest of those at the latest, in its own snapshot ({@link RowStateStatements#claim()}), so the
 * key's events go out in order. Rows put back below the floor by hand in SQL without a {@code next_attempt_at} are
 * found by a claim without floor every {@value #SWEEP_MILLIS} ms; such a release of a parked key may let events of
 * the key above the floor go out before them.
 */
public final class ClaimFloor {

    private static final Logger log = LoggerFactory.getLogger(ClaimFloor.class);
    /** How often the settlement of a candidate is checked (a pg_locks read). */
    public static final long CHECK_MILLIS = 100;
    /** How often a claim ignores the floor, to find rows an operator put back below it. */
    static final long SWEEP_MILLIS = 5_000;

    /**
     * {@code -Dtxoutbox.relay.claimFloor=false} turns the floor off (every claim scans from the start of the pending
     * index): a diagnostic switch, used by the benchmarks to measure what the floor does.
     */
    static final boolean ENABLED = !"false".equals(System.getProperty("txoutbox.relay.claimFloor"));

    /** The outbox table, bound into the sequence and lock reads. */
    private final String qualifiedTable;
    private boolean disabled;
    private boolean resolved;
    private String sequence;
    private long floor;
    private long candidate = -1;
    private Set<String> candidateHolders = Set.of();
    private long settled = -1;
    private long lastCheckNanos;
    private long lastSweepNanos = System.nanoTime();
    private boolean sweeping;

    public ClaimFloor(String qualifiedTable) {
        this.qualifiedTable = qualifiedTable;
    }

    /** Forget everything: the lane was (re)acquired, or its session was replaced. */
    public void reset() {
        floor = 0;
        candidate = -1;
        settled = -1;
        candidateHolders = Set.of();
    }

    /**
     * Run inside the claim's transaction, before the claim: moves the settlement check along (at most every
     * {@value #CHECK_MILLIS} ms). Returns the floor the claim should use (0: none).
     */
    public long beforeClaim(Connection c) throws SQLException {
        long now = System.nanoTime();
        sweeping = now - lastSweepNanos >= TimeUnit.MILLISECONDS.toNanos(SWEEP_MILLIS);
        if (sweeping) {
            lastSweepNanos = now;
        }
        if (!ENABLED || disabled || !resolve(c)) {
            return 0;
        }
        if (now - lastCheckNanos >= TimeUnit.MILLISECONDS.toNanos(CHECK_MILLIS)) {
            lastCheckNanos = now;
            if (candidate < 0) {
                candidate = lastValue(c); // first the ids handed out so far, then who may still commit some
                candidateHolders = Defects.active(Defects.Defect.FLOOR_PASSES_WRITER) ? new java.util.HashSet<>()
                        : holders(c);
            } else {
                Set<String> still = holders(c);
                still.retainAll(candidateHolders);
                if (still.isEmpty()) {
                    settled = candidate; // every row up to it is committed or gone: the claim below sees them all
                    candidate = -1;
                }
            }
        }
        return sweeping ? 0 : floor;
    }

    /**
     * After the claim: {@code firstClaimed} the lowest id it returned (or -1), {@code firstWaiting} the lowest id of
     * a row of the lane that backs off (PENDING with a {@code next_attempt_at}; not a parked one), or -1. Both are
     * used only when {@link #settled()} was not -1 (the floor moves); otherwise nothing changes, so a caller need not
     * read {@code firstWaiting} then.
     */
    public void afterClaim(long firstClaimed, long firstWaiting) {
        if (settled < 0) {
            return;
        }
        long next = settled + 1;
        if (firstClaimed >= 0) {
            next = Math.min(next, firstClaimed);
        }
        if (firstWaiting >= 0) {
            next = Math.min(next, firstWaiting);
        }
        if (!sweeping && next < floor) {
            log.debug("claim floor lowered from {} to {}", floor, next);
        }
        floor = next;
        settled = -1;
        if (log.isDebugEnabled()) {
            log.debug("claim floor {} (first claimed {}, first waiting {})", floor, firstClaimed, firstWaiting);
        }
    }

    public long floor() {
        return floor;
    }

    /**
     * The id the last {@link #beforeClaim} proved settled (every row with an id at or below it is committed or gone,
     * and a statement after that check sees them all), or -1; {@link #afterClaim} consumes it.
     */
    public long settled() {
        return settled;
    }

    /**
     * The floor's proof for a reader that walks the table by id once and must not pass a row that commits after it
     * went by (a replay): {@code provable} false when the sequence gives no such proof (no identity sequence, an
     * increment or cache above 1); else {@code settledUpTo} is an id such that every row at or below it is committed
     * or gone, or -1 when {@code stillOpen} writer transactions had not ended by the deadline.
     */
    public record Settlement(boolean provable, long settledUpTo, int stillOpen) {
    }

    /**
     * Waits (checking every {@value #CHECK_MILLIS} ms, each check its own statement: {@code c} is in autocommit) until
     * the ids handed out so far are settled, by the rule the floor uses: read the sequence, then the transactions that
     * may still commit ids up to it, and wait for those to end. {@code stop} ends the wait early (returns unsettled).
     */
    public Settlement awaitSettled(Connection c, long deadlineNanos, java.util.function.BooleanSupplier stop)
            throws SQLException, InterruptedException {
        if (!resolve(c)) {
            return new Settlement(false, -1, 0);
        }
        long upTo = lastValue(c); // first the ids handed out so far, then who may still commit some
        Set<String> open = holders(c);
        while (true) {
            Set<String> still = holders(c);
            still.retainAll(open);
            open = still; // a virtual transaction id is never reused, so the set only shrinks
            if (open.isEmpty()) {
                return new Settlement(true, upTo, 0);
            }
            if (System.nanoTime() - deadlineNanos >= 0 || stop.getAsBoolean()) {
                return new Settlement(true, -1, open.size());
            }
            TimeUnit.MILLISECONDS.sleep(CHECK_MILLIS);
        }
    }

    private boolean resolve(Connection c) throws SQLException {
        if (resolved) {
            return true;
        }
        try (PreparedStatement ps = c.prepareStatement(RelayStatements.FLOOR_SEQUENCE)) {
            ps.setString(1, qualifiedTable);
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next()) {
                    disabled = true;
                    log.warn("txoutbox-relay: no identity sequence found for the outbox's id column; claims scan "
                            + "from the start of the pending index");
                    return false;
                }
                sequence = rs.getString(1);
                if (rs.getLong(3) != 1) {
                    disabled = true;
                    log.warn("txoutbox-relay: sequence {} has INCREMENT {}; claims scan from the start of the "
                            + "pending index", sequence, rs.getLong(3));
                    return false;
                }
                if (rs.getLong(2) > 1) {
                    disabled = true;
                    log.warn("txoutbox-relay: sequence {} has CACHE {} and so hands out ids out of order; claims "
                            + "scan from the start of the pending index (ALTER SEQUENCE {} CACHE 1 to fix)",
                            sequence, rs.getLong(2), sequence);
                    return false;
                }
            }
        }
        resolved = true;
        return true;
    }

    private long lastValue(Connection c) throws SQLException {
        return IdSequence.lastHandedOut(c, sequence);
    }

    private Set<String> holders(Connection c) throws SQLException {
        Set<String> out = new HashSet<>();
        try (PreparedStatement ps = c.prepareStatement(RelayStatements.FLOOR_WRITERS)) {
            // untyped, so the server reads it as the regclass the statement casts it to, once, as a literal was
            ps.setObject(1, qualifiedTable, Types.OTHER);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    out.add(rs.getString(1));
                }
            }
        }
        return out;
    }
}
