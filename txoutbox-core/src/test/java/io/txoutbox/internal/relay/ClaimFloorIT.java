package io.txoutbox.internal.relay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.txoutbox.Outbox;
import io.txoutbox.OutboxMessage;
import io.txoutbox.OutboxSchema;
import io.txoutbox.PollingRelay;
import io.txoutbox.internal.progress.ClaimFloor;
import io.txoutbox.testing.postgres.PostgresExtension;
import io.txoutbox.testing.postgres.TestDatabase;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import javax.sql.DataSource;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The claim floor against a real PostgreSQL: it passes settled ids, never an id a still-open writer may commit, and
 * is not held back by transactions that only read the table. Its connection is set up like a relay lane's
 * ({@link LaneSession#configure}); subclasses run the same scenarios with other session defaults ({@link #sessions}).
 */
@Tag("pg-version")
class ClaimFloorIT {

    @RegisterExtension
    static final PostgresExtension postgres = new PostgresExtension();

    private TestDatabase db;
    private OutboxSchema schema;
    private Outbox outbox;

    @BeforeEach
    void setUp(TestInfo info) {
        db = postgres.database();
        schema = OutboxSchema.builder().schema(db.schema())
                .outboxTable("floor_" + Math.abs(info.getTestMethod().orElseThrow().getName().hashCode())).build();
        schema.migrate(db.dataSource());
        outbox = Outbox.builder().schema(schema).build();
    }

    /** Where the relay's connections come from. */
    DataSource sessions(TestDatabase db) {
        return db.dataSource();
    }

    private Connection relayConnection() throws Exception {
        Connection c = sessions(db).getConnection();
        c.setAutoCommit(true);
        try (PollingRelay relay = PollingRelay.builder().dataSource(db.dataSource()).schema(schema)
                .transport((lane, batch) -> java.util.concurrent.CompletableFuture.completedFuture(List.of()))
                .build()) {
            LaneSession.configure(c, relay.config(), "claim-floor-test");
        }
        return c;
    }

    private long write(Connection c) throws Exception {
        outbox.publish(c, OutboxMessage.builder().topic("t").aggregate("A", "k").eventType("E").jsonPayload("{}")
                .build());
        try (Statement st = c.createStatement(); ResultSet rs = st.executeQuery("SELECT max(id) FROM "
                + schema.qualifiedOutboxTable())) {
            rs.next();
            return rs.getLong(1);
        }
    }

    private long committed() throws Exception {
        try (Connection c = db.connect()) {
            c.setAutoCommit(false);
            long id = write(c);
            c.commit();
            return id;
        }
    }

    /** One claim cycle as a lane runs it, with nothing pending to claim (the rows stand for published ones). */
    private long cycle(ClaimFloor floor, Connection relay) throws Exception {
        floor.beforeClaim(relay);
        relay.commit();
        floor.afterClaim(-1, -1);
        return floor.floor();
    }

    @Test
    void the_floor_passes_settled_ids_even_while_a_reader_holds_the_table() throws Exception {
        long last = 0;
        for (int i = 0; i < 5; i++) {
            last = committed();
        }
        ClaimFloor floor = new ClaimFloor(schema.qualifiedOutboxTable());
        try (Connection reader = db.connect(); Connection relay = relayConnection()) {
            reader.setAutoCommit(false);
            try (Statement st = reader.createStatement()) {
                st.executeQuery("SELECT count(*) FROM " + schema.qualifiedOutboxTable()).close(); // AccessShareLock
            }
            relay.setAutoCommit(false);
            long settledUpTo = last;
            await().atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(50))
                    .until(() -> cycle(floor, relay) > settledUpTo);
            reader.rollback();
        }
    }

    /**
     * A backing-off row below the floor counts only in a claim that moves the floor ({@code settled() >= 0}): the
     * row-state claim reads the lane's first backing-off row only then, and saves that round trip in the others.
     */
    @Test
    void a_backing_off_row_counts_only_in_a_claim_that_moves_the_floor() throws Exception {
        long last = 0;
        for (int i = 0; i < 3; i++) {
            last = committed();
        }
        ClaimFloor floor = new ClaimFloor(schema.qualifiedOutboxTable());
        try (Connection relay = relayConnection()) {
            relay.setAutoCommit(false);
            long settledUpTo = last;
            await().atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(50))
                    .until(() -> cycle(floor, relay) > settledUpTo);
            long raised = floor.floor();
            int unmoved = 0;
            long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
            while (true) {
                assertThat(System.nanoTime() - deadline).as("a claim that moves the floor within 10 s").isNegative();
                floor.beforeClaim(relay);
                relay.commit();
                boolean moves = floor.settled() >= 0;
                floor.afterClaim(-1, 1); // a row with id 1 backs off
                if (moves) {
                    assertThat(floor.floor()).as("the claim that moves the floor keeps it at the waiting row")
                            .isEqualTo(1);
                    break;
                }
                assertThat(floor.floor()).as("a claim that does not move the floor ignores the waiting row")
                        .isEqualTo(raised);
                unmoved++;
                Thread.sleep(20);
            }
            assertThat(unmoved).as("claims between two settlement checks (%d ms apart)", ClaimFloor.CHECK_MILLIS)
                    .isPositive();
        }
    }

    @Test
    void the_floor_never_passes_the_id_of_an_open_writer() throws Exception {
        committed();
        ClaimFloor floor = new ClaimFloor(schema.qualifiedOutboxTable());
        try (Connection writer = db.connect(); Connection relay = relayConnection()) {
            writer.setAutoCommit(false);
            long open = write(writer);
            long after = 0;
            for (int i = 0; i < 5; i++) {
                after = committed();
            }
            assertThat(after).isGreaterThan(open);
            relay.setAutoCommit(false);
            await().during(Duration.ofMillis(1_500)).atMost(Duration.ofSeconds(5)).pollInterval(Duration.ofMillis(50))
                    .until(() -> cycle(floor, relay) <= open);
            writer.commit();
            long settledUpTo = after;
            await().atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(50))
                    .until(() -> cycle(floor, relay) > settledUpTo);
        }
    }

    @Test
    void a_sequence_that_caches_ids_turns_the_floor_off() throws Exception {
        for (int i = 0; i < 3; i++) {
            committed();
        }
        try (Connection c = db.connect(); Statement st = c.createStatement()) {
            st.execute("ALTER TABLE " + schema.qualifiedOutboxTable() + " ALTER COLUMN id SET CACHE 20");
        }
        ClaimFloor floor = new ClaimFloor(schema.qualifiedOutboxTable());
        try (Connection relay = relayConnection()) {
            relay.setAutoCommit(false);
            // without the cache check the floor would pass the settled ids within two checks (200 ms)
            await().during(Duration.ofMillis(800)).atMost(Duration.ofSeconds(3)).pollInterval(Duration.ofMillis(50))
                    .until(() -> cycle(floor, relay) == 0);
        }
    }
}
