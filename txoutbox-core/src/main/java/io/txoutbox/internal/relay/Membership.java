package io.txoutbox.internal.relay;

import io.txoutbox.RelayConfig;
import io.txoutbox.internal.pg.AdvisoryLocks;
import io.txoutbox.internal.pg.Jdbc;
import io.txoutbox.internal.pg.RelayStatements;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * This instance's membership among the relay instances of one outbox table, with no coordinator but PostgreSQL:
 * every instance holds the shared "member" advisory lock on a session of its own, so the number of sessions holding
 * it is the number of live instances. From it, once a second, comes the fair share of lanes
 * ({@code ceil(lanes / members)}, capped by {@code maxLanesPerInstance}). The session lives under the same
 * {@code idle_session_timeout} lease as the lanes, so a paused instance stops counting after the lease.
 */
final class Membership implements Runnable, AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(Membership.class);

    private final RelayConfig config;
    private final DataSource dataSource;
    private final RelayStatements statements;
    private final String instanceId;
    private final Thread thread;
    private volatile boolean stopping;
    private volatile int members = 1;
    private volatile int fairShare;
    private Connection connection;
    private int isolation = Connection.TRANSACTION_READ_COMMITTED;
    private final int cap;

    Membership(RelayConfig config, DataSource dataSource, RelayStatements statements, String instanceId) {
        this.cap = Math.min(config.lanes(), config.maxLanesPerInstance());
        this.config = config;
        this.dataSource = dataSource;
        this.statements = statements;
        this.instanceId = instanceId;
        this.fairShare = Math.min(config.lanes(), config.maxLanesPerInstance());
        this.thread = new Thread(this, "txoutbox-relay-" + config.name() + "-members");
        this.thread.setDaemon(true);
    }

    void start() {
        thread.start();
    }

    /** How many lanes this instance should own now. */
    int fairShare() {
        return fairShare;
    }

    int members() {
        return members;
    }

    @Override
    public void run() {
        while (!stopping) {
            try {
                if (connection == null) {
                    connection = dataSource.getConnection();
                    connection.setAutoCommit(true);
                    isolation = LaneSession.configure(connection, config, "members " + instanceId);
                    AdvisoryLocks.relayMember(config.schema(), config.lanes(), cap).lockShared(connection);
                }
                List<Integer> caps = new ArrayList<>(Jdbc.queryInts(connection, RelayStatements.MEMBER_CAPS,
                        statements.tableKeyHalf(), AdvisoryLocks.KIND_MEMBER, config.lanes()));
                if (caps.isEmpty()) {
                    caps.add(cap); // our own lock is always there; an empty answer is a race with a reconnect
                }
                int count = caps.size();
                int share = share(config.lanes(), caps, cap);
                if (count != members || share != fairShare) {
                    log.info("txoutbox-relay {}: {} relay instance(s) share {} lanes; this one takes up to {}",
                            instanceId, count, config.lanes(), share);
                }
                members = count;
                fairShare = share;
            } catch (SQLException | RuntimeException e) {
                log.warn("txoutbox-relay {}: membership check failed, retrying: {}", instanceId, e.toString());
                close(connection);
                connection = null;
            }
            try {
                Thread.sleep(1_000); // a heartbeat period, not a wait for a condition
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                break;
            }
        }
        close(connection);
        connection = null;
    }

    private void close(Connection c) {
        if (c == null) {
            return;
        }
        try {
            LaneSession.reset(c, isolation);
            c.close();
        } catch (SQLException ignored) {
            // already gone
        }
    }

    /**
     * Water-filling: the smallest level L at which the members' {@code min(cap, L)} add up to all lanes; this
     * instance takes {@code min(myCap, L)}. So capped instances take what they may and the others share the rest;
     * every lane has a taker as long as the caps allow.
     */
    static int share(int lanes, List<Integer> caps, int myCap) {
        for (int level = 1; level <= lanes; level++) {
            int total = 0;
            for (int c : caps) {
                total += Math.min(c, level);
            }
            if (total >= lanes) {
                return Math.min(myCap, level);
            }
        }
        return myCap; // the caps leave lanes without a taker: take all we may
    }

    @Override
    public void close() {
        stopping = true;
        thread.interrupt();
        try {
            thread.join(5_000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
