package io.txoutbox.internal.relay;

import static org.assertj.core.api.Assertions.assertThat;

import tools.jackson.databind.JsonNode;
import tools.jackson.databind.ObjectMapper;
import io.txoutbox.OutboxSchema;
import io.txoutbox.PollingRelay;
import io.txoutbox.internal.progress.RowStateStatements;
import io.txoutbox.testing.postgres.PostgresExtension;
import io.txoutbox.testing.postgres.TestDatabase;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The plans of the lane's reads before and in the claim with 200,000 parked heads, on a lane session
 * ({@link LaneSession#configure}) and with statistics taken before the mass park (autovacuum off for the table), the
 * case in which the planner, believing the waiting index empty, turned the hold-back into a join that read every
 * waiting row per candidate (13.6 s for 100 rows on PostgreSQL 15). What must hold on every version: the hold-back is
 * one probe of the waiting index per candidate row, the whole claim reads a few blocks per row, and the reads before
 * it a few blocks in all.
 */
@Tag("pg-version")
class ParkedClaimPlanIT {

    @RegisterExtension
    static final PostgresExtension postgres = new PostgresExtension();

    private static final int PARKED = 200_000;
    private static final int LIMIT = 500;

    private TestDatabase db;
    private OutboxSchema schema;
    private RowStateStatements sql;
    private String table;

    @BeforeEach
    void setUp() { // one test: 200,000 rows take 3-16 s to insert here, depending on the machine's load
        db = postgres.database();
        schema = OutboxSchema.builder().schema(db.schema()).outboxTable("parked_plan").shards(8).build();
        schema.migrate(db.dataSource());
        sql = new RowStateStatements(schema);
        table = schema.qualifiedOutboxTable();
        String columns = " (topic, partition_key, aggregate_type, aggregate_id, event_type, payload";
        db.execute("ALTER TABLE " + table + " SET (autovacuum_enabled = false)",
                "INSERT INTO " + table + columns + ") SELECT 'ok', 'h-' || g, 'A', 'a', 'E', '{}'::jsonb"
                        + " FROM generate_series(1, 100) g",
                "ANALYZE " + table,
                "INSERT INTO " + table + columns + ", state, attempts, last_error) SELECT 'gone', 'parked-' || g, 'A',"
                        + " 'a', 'E', '{}'::jsonb, 'PARKED', 1, 'topic gone' FROM generate_series(1, " + PARKED + ") g",
                // a held event for every 1,000th parked key, and healthy ones after them
                "INSERT INTO " + table + columns + ") SELECT 'gone', 'parked-' || g, 'A', 'a', 'E', '{}'::jsonb"
                        + " FROM generate_series(1, " + PARKED + ", 1000) g",
                "INSERT INTO " + table + columns + ") SELECT 'ok', 'h2-' || g, 'A', 'a', 'E', '{}'::jsonb"
                        + " FROM generate_series(1, 2000) g");
    }

    private Connection laneSession() throws Exception {
        Connection c = db.dataSource().getConnection();
        c.setAutoCommit(true);
        try (PollingRelay relay = PollingRelay.builder().dataSource(db.dataSource()).schema(schema)
                .transport((lane, batch) -> CompletableFuture.completedFuture(List.of())).build()) {
            LaneSession.configure(c, relay.config(), "parked-plan-test");
        }
        return c;
    }

    private static JsonNode explain(Connection c, String statement, Object... params) throws Exception {
        try (PreparedStatement ps = c.prepareStatement("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + statement)) {
            for (int i = 0; i < params.length; i++) {
                if (params[i] instanceof Integer[] shards) {
                    ps.setArray(i + 1, c.createArrayOf("integer", shards));
                } else {
                    ps.setObject(i + 1, params[i]);
                }
            }
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return new ObjectMapper().readTree(rs.getString(1)).get(0);
            }
        }
    }

    private static void nodes(JsonNode plan, List<JsonNode> out) {
        out.add(plan);
        JsonNode children = plan.get("Plans");
        if (children != null) {
            children.forEach(child -> nodes(child, out));
        }
    }

    private static long blocks(JsonNode plan) {
        return plan.path("Shared Hit Blocks").asLong() + plan.path("Shared Read Blocks").asLong();
    }

    private static final Integer[] ALL_SHARDS = {0, 1, 2, 3, 4, 5, 6, 7};

    @Test
    void the_hold_back_is_one_probe_of_the_waiting_index_per_candidate_row_whatever_the_statistics()
            throws Exception {
        try (Connection c = laneSession()) {
            for (long floor : new long[] {0, PARKED}) { // the sweep (no floor) and a claim above the parked heads
                JsonNode result = explain(c, sql.claim(), floor, ALL_SHARDS, ALL_SHARDS, LIMIT);
                JsonNode plan = result.get("Plan");
                List<JsonNode> all = new ArrayList<>();
                nodes(plan, all);
                String shape = all.stream().map(n -> n.path("Node Type").asText() + "(" + n.path("Index Name")
                        .asText() + "," + n.path("Parent Relationship").asText() + ")").toList().toString();
                assertThat(all).as("floor %d: %s", floor, shape).noneMatch(n -> n.path("Node Type").asText()
                        .matches("Hash.*|Materialize|Seq Scan|Bitmap.*|Merge.*"));
                JsonNode probe = all.stream().filter(n -> n.path("Index Name").asText().endsWith("_waiting"))
                        .findFirst().orElseThrow(() -> new AssertionError("no probe of the waiting index: " + shape));
                assertThat(all).as("the probe is a subplan: %s", shape)
                        .anyMatch(n -> n.path("Parent Relationship").asText().equals("SubPlan"));
                assertThat(probe.path("Actual Rows").asDouble()).as("rows per probe, " + shape).isLessThanOrEqualTo(1);
                long rows = plan.path("Actual Rows").asLong();
                assertThat(rows).as(shape).isEqualTo(LIMIT);
                assertThat(blocks(plan)).as("blocks read by the claim with floor %d (%s)", floor, shape)
                        .isLessThan(20L * LIMIT);
                System.out.println("ParkedClaimPlanIT: floor " + floor + ": " + rows + " rows, " + blocks(plan)
                        + " blocks, " + result.path("Execution Time").asDouble() + " ms, " + shape);
            }
            // the read before the claim (the first row that backs off) takes a few blocks
            JsonNode before = explain(c, sql.waiting(), (Object) ALL_SHARDS);
            assertThat(blocks(before.get("Plan"))).as("blocks read before the claim: %s", before).isLessThan(20);
            System.out.println("ParkedClaimPlanIT: before the claim " + blocks(before.get("Plan")) + " blocks, "
                    + before.path("Execution Time").asDouble() + " ms");
        }
    }
}
