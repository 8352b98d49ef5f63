package io.txoutbox.internal.relay;

import io.txoutbox.OutboxException;
import io.txoutbox.spi.SendResult;
import io.txoutbox.spi.SenderFencedException;
import io.txoutbox.spi.TransportLane;
import io.txoutbox.internal.pg.Jdbc;
import io.txoutbox.internal.pg.RelayStatements;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Tells a lane's normal takeover from another outbox that uses the lane's fencing id.
 *
 * <p>A transport reports a fenced sender ({@link SenderFencedException}) when a newer sender with the same fencing id
 * started. Normally that is the lane's new owner, and the fenced one is the old owner, whose session (and with it the
 * lane's advisory lock) is gone. A lane fenced while its session provably still holds the lock was fenced by a sender
 * that is not an owner of this outbox's lane: another outbox with the same installation id (a database restored or
 * cloned from this one's backup) or the same explicit id prefix. One such fencing can still be a paused former owner
 * of this outbox that resumed with a batch it had claimed before its lease ran out and had to start a new sender for
 * it (its next claim fails, so it can do that once); a second one while the lane is held is a conflict, and the lane
 * stops instead of fencing the other outbox back, over and over.
 */
final class FencingGuard {

    private static final Logger log = LoggerFactory.getLogger(FencingGuard.class);

    /** Fencings while this session held the lane, since it took the lane. */
    private int whileOwner;

    /** A new ownership: a former owner's stray batch may fence it once again. */
    void reset() {
        whileOwner = 0;
    }

    /**
     * After a batch's results: null, or the conflict that must stop the lane. Checks the lock on the lane's
     * connection only when a result says "fenced"; a session that cannot answer proves nothing (the mark finds out).
     */
    OutboxException check(Connection c, long laneKey, TransportLane lane, String installationTable,
            List<SendResult> results) {
        SenderFencedException fenced = null;
        for (SendResult r : results) {
            if (r instanceof SendResult.Failed f && f.cause() instanceof SenderFencedException e) {
                fenced = e;
                break;
            }
        }
        if (fenced == null) {
            return null;
        }
        boolean held;
        try {
            held = holdsLock(c, laneKey);
        } catch (SQLException e) {
            log.debug("txoutbox-relay {}: could not check the lane's lock after a fencing: {}", lane.name(),
                    e.toString());
            return null;
        }
        if (!held) {
            return null; // the ordinary case: this instance lost the lane, and its new owner fenced it
        }
        whileOwner++;
        if (whileOwner == 1) {
            log.warn("txoutbox-relay {}: fenced (fencing id '{}') while this instance still holds the lane; a paused "
                    + "former owner's last batch can do that once; a second time while the lane is held means that "
                    + "another outbox shares the id, and the lane stops", lane.name(), fenced.fencingId());
            return null;
        }
        return new OutboxException("relay lane " + lane.index() + " (" + lane.name() + ") stopped: its sender with "
                + "fencing id '" + fenced.fencingId() + "' (Kafka: the transactional.id) was fenced " + whileOwner
                + " times while this instance holds the lane's lock, so another outbox uses the same fencing id. "
                + "This side: outbox " + lane.outbox() + ", installation id " + lane.installationId() + ", instance "
                + lane.instance() + ". The other side uses the same id: an outbox with the same installation id (a "
                + "database restored or cloned from this one's backup, or this one from its) or, with an explicit "
                + "transactionalIdPrefix, the same prefix and relay name. Give one of the two a new installation id "
                + "(as the tables' owner, with its relays stopped: UPDATE " + installationTable
                + " SET id = gen_random_uuid()) or its own transactionalIdPrefix, then restart this relay. Until then "
                + "this lane keeps its lock and sends nothing (its events wait, none is lost); the other lanes go on",
                fenced, false);
    }

    /** Whether this session holds the lane's advisory lock (a bigint key: classid high word, objid low word). */
    static boolean holdsLock(Connection c, long key) throws SQLException {
        boolean held = Jdbc.queryBoolean(c, RelayStatements.HOLDS_LOCK, key >>> 32, key & 0xFFFF_FFFFL);
        c.commit();
        return held;
    }
}
