package io.txoutbox.internal.inbox;

import io.txoutbox.InboxWorkerConfig;
import io.txoutbox.internal.lane.SessionLease;
import java.time.Duration;

/**
 * The inbox worker's lane sessions ({@link SessionLease}, shared with the relay). A handler runs inside its lane's
 * transaction, so the bounds follow from the lease and the handler budget:
 * <ul>
 * <li>{@code statement_timeout} and {@code lock_timeout}: the handler budget, which no statement of a handler may
 * outlast anyway (the lane's own claims and marks stay far below it);
 * <li>{@code idle_in_transaction_session_timeout}, {@code idle_session_timeout}, the TCP timeouts: the lease. A
 * handler waits outside the database for at most its budget, half the lease, so only a stopped or cut-off worker
 * is ended;
 * <li>{@code transaction_timeout} (PostgreSQL 17+): {@value #TRANSACTION_LEASES} leases. A batch starts no handler
 * once it has run for the lease ({@link #batchDeadline}); the last handler, its statement in flight and the marks
 * each stay within half a lease or a budget more.
 * </ul>
 */
final class InboxSession {

    static final int TRANSACTION_LEASES = 4;

    private InboxSession() {
    }

    static SessionLease.Settings settings(InboxWorkerConfig config, String laneId) {
        // names come from validated configuration: [A-Za-z0-9._-]
        return new SessionLease.Settings(config.handlerTimeout(), config.handlerTimeout(), config.leaseTimeout(),
                config.leaseTimeout().multipliedBy(TRANSACTION_LEASES), config.leaseTimeout(),
                "txoutbox-inbox " + laneId);
    }

    /** How long a batch may take new events: after that its remaining events stay pending for the next batch. */
    static Duration batchDeadline(InboxWorkerConfig config) {
        return config.leaseTimeout();
    }
}
