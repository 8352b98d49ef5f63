package io.txoutbox.internal.progress;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.txoutbox.OutboxSchema;
import io.txoutbox.internal.pg.AdminStatements;
import io.txoutbox.internal.pg.OperatorStatements.Change;
import io.txoutbox.testing.postgres.PostgresExtension;
import io.txoutbox.testing.postgres.TestDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The cursor model holds a row behind its key's waiting head ({@code HELD}) while an operator may be releasing that
 * key (skip, discard): the two meet on the head row, which the hold locks {@code FOR SHARE} and the operator's change
 * updates. Both orders are forced here, each transaction on its own connection, the second one's statement started
 * while the first is open: whichever way they meet, the row ends up claimable (PENDING and due), never held behind a
 * head that is gone. Without the lock, the first order leaves the row HELD for good: the hold reads the head as parked
 * (the operator's change is not committed), and the operator's release, run before the hold commits, cannot see the
 * row held.
 */
class CursorHoldRaceIT {

    @RegisterExtension
    static final PostgresExtension postgres = new PostgresExtension();

    private TestDatabase db;
    private OutboxSchema schema;
    private CursorStatements sql;
    private AdminStatements admin;
    private ProgressModel.Release release;
    private UUID head;
    private long held;

    @BeforeEach
    void parkedKeyWithALaterEvent(TestInfo test) throws SQLException {
        db = postgres.database();
        schema = OutboxSchema.builder().schema(db.schema()).outboxTable("hold_" + Math.abs(test.getTestMethod()
                .orElseThrow().getName().hashCode())).shards(4).progress(OutboxSchema.Progress.CURSOR).build();
        schema.migrate(db.dataSource());
        ProgressModel model = ProgressModels.of(schema);
        sql = new CursorStatements(schema);
        admin = new AdminStatements(schema, model::pending);
        release = model.releaseParked();
        String t = schema.qualifiedOutboxTable();
        db.execute("INSERT INTO " + t + " (topic, partition_key, aggregate_type, aggregate_id, event_type, state,"
                + " attempts, last_error) VALUES ('orders', 'k', 'Order', '1', 'Poison', 'PARKED', 3, 'poison'),"
                + " ('orders', 'k', 'Order', '1', 'Later', 'PENDING', 0, NULL)");
        head = UUID.fromString(queryString("SELECT event_id::text FROM " + t + " WHERE event_type = 'Poison'"));
        held = db.queryLong("SELECT id FROM " + t + " WHERE event_type = 'Later'");
    }

    @Test
    void an_operator_skip_first_then_the_lanes_hold_the_row_is_made_due() throws Exception {
        try (Connection operator = db.connect(); Connection lane = db.connect()) {
            operator.setAutoCommit(false);
            lane.setAutoCommit(false);
            change(operator); // the head is skipped, not yet committed
            int lanePid = pid(lane);
            CountDownLatch finish = new CountDownLatch(1);
            CompletableFuture<Integer> holding = CompletableFuture.supplyAsync(() -> holdThenDue(lane, finish));
            awaitWaitingOrDone(lanePid, holding);
            release(operator);
            operator.commit();
            finish.countDown();
            assertThat(holding.get(10, TimeUnit.SECONDS)).as("rows held").isZero();
        }
        assertClaimable();
    }

    @Test
    void the_lanes_hold_first_then_an_operator_skip_releases_the_row() throws Exception {
        try (Connection operator = db.connect(); Connection lane = db.connect()) {
            operator.setAutoCommit(false);
            lane.setAutoCommit(false);
            assertThat(hold(lane)).as("held behind the parked head").isEqualTo(1); // not yet committed
            int operatorPid = pid(operator);
            CompletableFuture<Void> skipping = CompletableFuture.runAsync(() -> {
                try {
                    change(operator);
                    release(operator);
                    operator.commit();
                } catch (SQLException e) {
                    throw new IllegalStateException(e);
                }
            });
            awaitWaitingOrDone(operatorPid, skipping);
            assertThat(skipping).as("the skip waits for the hold's lock on the head").isNotDone();
            lane.commit();
            skipping.get(10, TimeUnit.SECONDS);
        }
        assertClaimable();
    }

    /** The later event is pending and due: the claim's retry part takes it. */
    private void assertClaimable() {
        String t = schema.qualifiedOutboxTable();
        assertThat(queryString("SELECT state || ' ' || (next_attempt_at IS NOT NULL) FROM " + t + " WHERE id = "
                + held)).isEqualTo("PENDING true");
        assertThat(queryString("SELECT state FROM " + t + " WHERE event_id = '" + head + "'")).isEqualTo("DEAD");
    }

    private String queryString(String query) {
        try (Connection c = db.connect(); var st = c.createStatement(); var rs = st.executeQuery(query)) {
            rs.next();
            return rs.getString(1);
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }

    /** The lane's statements for a row whose key waits: hold it, else make it due; commits once told to. */
    private int holdThenDue(Connection lane, CountDownLatch finish) {
        try {
            int n = hold(lane);
            try (PreparedStatement ps = lane.prepareStatement(sql.due())) {
                ps.setArray(1, lane.createArrayOf("bigint", new Long[] {held}));
                ps.executeUpdate();
            }
            finish.await(10, TimeUnit.SECONDS);
            lane.commit();
            return n;
        } catch (SQLException | InterruptedException e) {
            throw new IllegalStateException(e);
        }
    }

    private int hold(Connection lane) throws SQLException {
        try (PreparedStatement ps = lane.prepareStatement(sql.hold())) {
            ps.setArray(1, lane.createArrayOf("bigint", new Long[] {held}));
            return ps.executeUpdate();
        }
    }

    /** OutboxAdmin's skip of the head, its statements as the admin runs them (the change, then the release). */
    private void change(Connection operator) throws SQLException {
        try (PreparedStatement ps = operator.prepareStatement(admin.change(Change.SKIP))) {
            ps.setString(1, "ops");
            ps.setArray(2, operator.createArrayOf("uuid", new UUID[] {head}));
            ps.setArray(3, operator.createArrayOf("text", new String[] {"PARKED"}));
            assertThat(ps.executeUpdate()).isEqualTo(1);
        }
    }

    private void release(Connection operator) throws SQLException {
        assertThat(release.afterChange()).isTrue();
        try (PreparedStatement ps = operator.prepareStatement(release.sql())) {
            ps.setArray(1, operator.createArrayOf("uuid", new UUID[] {head}));
            ps.executeUpdate();
        }
    }

    private static int pid(Connection c) throws SQLException {
        try (var st = c.createStatement(); var rs = st.executeQuery("SELECT pg_backend_pid()")) {
            rs.next();
            return rs.getInt(1);
        }
    }

    /** Until backend {@code pid} waits for a lock, or its work is done (then there was nothing to wait for). */
    private void awaitWaitingOrDone(int pid, CompletableFuture<?> work) {
        await().atMost(Duration.ofSeconds(10)).until(() -> work.isDone() || db.queryLong(
                "SELECT count(*) FROM pg_stat_activity WHERE pid = " + pid + " AND wait_event_type = 'Lock'") == 1);
    }
}
