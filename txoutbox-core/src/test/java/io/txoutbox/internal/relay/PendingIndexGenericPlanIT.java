package io.txoutbox.internal.relay;

import io.txoutbox.internal.progress.RowStateStatements;
import static org.assertj.core.api.Assertions.assertThat;

import tools.jackson.databind.JsonNode;
import tools.jackson.databind.ObjectMapper;
import io.txoutbox.OutboxSchema;
import io.txoutbox.PollingRelay;
import io.txoutbox.testing.postgres.PostgresExtension;
import io.txoutbox.testing.postgres.TestDatabase;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The relay's claim and mark keep {@code 'PENDING'} a quoted literal, so that the pending partial index
 * ({@code <table>_pending ... WHERE state = 'PENDING'}, V1) is usable also by a generic plan, which cannot prove a
 * partial index's predicate from a parameter. The statements are prepared server-side (what pgjdbc does from its
 * {@code prepareThreshold} on) on a session set up like a lane's, with {@code plan_cache_mode = force_generic_plan},
 * and their generic plans must read the pending index. A control shows the check can fail: the same claim with the
 * state as a parameter does not use it.
 */
class PendingIndexGenericPlanIT {

    @RegisterExtension
    static final PostgresExtension postgres = new PostgresExtension();

    private static final int PUBLISHED = 20_000;
    private static final int PENDING = 50;
    private static TestDatabase db;
    private static OutboxSchema schema;

    @BeforeAll
    static void setUp() {
        db = postgres.database();
        schema = OutboxSchema.builder().schema(db.schema()).outboxTable("pending_plan").shards(4).build();
        schema.migrate(db.dataSource());
        String t = schema.qualifiedOutboxTable();
        String columns = " (topic, partition_key, aggregate_type, aggregate_id, event_type, payload";
        db.execute("INSERT INTO " + t + columns + ", state, published_at) SELECT 'ok', 'k-' || g, 'A', 'a', 'E',"
                        + " '{}'::jsonb, 'PUBLISHED', now() FROM generate_series(1, " + PUBLISHED + ") g",
                "INSERT INTO " + t + columns + ") SELECT 'ok', 'p-' || g, 'A', 'a', 'E', '{}'::jsonb"
                        + " FROM generate_series(1, " + PENDING + ") g",
                "ANALYZE " + t);
    }

    /** The statements under test, by name, with their parameter types: the one place naming the relay's SQL. */
    private static Map<String, String[]> statements(OutboxSchema schema) {
        RowStateStatements sql = new RowStateStatements(schema);
        Map<String, String[]> out = new LinkedHashMap<>();
        out.put("claim", new String[] {sql.claim(), "bigint, integer[], integer[], integer", "0, '{0,1,2,3}',"
                + " '{0,1,2,3}', 100"});
        out.put("claimWithCommitTime", new String[] {sql.claimWithCommitTime(), "bigint, integer[], integer[], integer",
                "0, '{0,1,2,3}', '{0,1,2,3}', 100"});
        out.put("markPublished", new String[] {sql.markPublished(), "bigint[]", "'{1,2,3}'"});
        return out;
    }

    private static Connection laneSession() throws Exception {
        Connection c = db.dataSource().getConnection();
        c.setAutoCommit(true);
        try (PollingRelay relay = PollingRelay.builder().dataSource(db.dataSource()).schema(schema)
                .transport((lane, batch) -> CompletableFuture.completedFuture(List.of())).build()) {
            LaneSession.configure(c, relay.config(), "pending-plan-test");
        }
        try (Statement st = c.createStatement()) {
            st.execute("SET plan_cache_mode = force_generic_plan");
        }
        return c;
    }

    /** JDBC placeholders as the server-side statement pgjdbc prepares has them: $1, $2, ... */
    private static String numbered(String jdbc) {
        StringBuilder b = new StringBuilder();
        int n = 0;
        for (char ch : jdbc.toCharArray()) {
            if (ch == '?') {
                b.append('$').append(++n);
            } else {
                b.append(ch);
            }
        }
        return b.toString();
    }

    /** The indexes the generic plan of the prepared statement reads (its EXPLAIN, not executed: in a rollback). */
    private static List<String> genericPlanIndexes(Connection c, String name, String sql, String types,
            String args) throws Exception {
        List<String> indexes = new ArrayList<>();
        c.setAutoCommit(false);
        try (Statement st = c.createStatement()) {
            st.execute("PREPARE " + name + " (" + types + ") AS " + numbered(sql));
            try (ResultSet rs = st.executeQuery("EXPLAIN (FORMAT JSON) EXECUTE " + name + " (" + args + ")")) {
                rs.next();
                JsonNode plan = new ObjectMapper().readTree(rs.getString(1)).get(0).get("Plan");
                collect(plan, indexes);
            }
        } finally {
            c.rollback();
            try (Statement st = c.createStatement()) {
                st.execute("DEALLOCATE ALL");
            }
            c.setAutoCommit(true);
        }
        return indexes;
    }

    private static void collect(JsonNode plan, List<String> out) {
        if (plan.hasNonNull("Index Name")) {
            out.add(plan.get("Index Name").asText());
        }
        JsonNode children = plan.get("Plans");
        if (children != null) {
            children.forEach(child -> collect(child, out));
        }
    }

    @Test
    void the_claim_and_the_mark_read_the_pending_index_under_a_generic_plan() throws Exception {
        String pendingIndex = schema.outboxTable() + "_pending";
        try (Connection c = laneSession()) {
            for (Map.Entry<String, String[]> e : statements(schema).entrySet()) {
                String[] s = e.getValue();
                assertThat(s[0]).as(e.getKey() + " names the state as a literal").contains("state = 'PENDING'");
                List<String> indexes = genericPlanIndexes(c, e.getKey().toLowerCase(), s[0], s[1], s[2]);
                assertThat(indexes).as(e.getKey() + ": indexes of its generic plan").contains(pendingIndex);
            }
        }
    }

    /** The control: the claim with the state as a parameter gets a generic plan that cannot use the partial index. */
    @Test
    void with_the_state_as_a_parameter_the_generic_plan_cannot_use_the_pending_index() throws Exception {
        String[] claim = statements(schema).get("claim");
        String parameterised = claim[0].replace("WHERE state = 'PENDING'", "WHERE state = ?::text");
        assertThat(parameterised).isNotEqualTo(claim[0]);
        try (Connection c = laneSession()) {
            // the state is the statement's first placeholder
            List<String> indexes = genericPlanIndexes(c, "claim_param", parameterised, "text, " + claim[1],
                    "'PENDING', " + claim[2]);
            assertThat(indexes).as("indexes of the parameterised claim's generic plan")
                    .doesNotContain(schema.outboxTable() + "_pending");
        }
    }
}
