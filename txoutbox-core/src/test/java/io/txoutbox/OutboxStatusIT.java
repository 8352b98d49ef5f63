package io.txoutbox;

import static org.assertj.core.api.Assertions.assertThat;

import io.txoutbox.testing.postgres.PostgresExtension;
import io.txoutbox.testing.postgres.TestDatabase;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The status snapshot's per-shard view against the table. */
class OutboxStatusIT {

    @RegisterExtension
    static final PostgresExtension postgres = new PostgresExtension();

    @Test
    void per_shard_the_snapshot_counts_pending_events_and_ages_them_by_the_shards_first_pending_event()
            throws Exception {
        TestDatabase db = postgres.database();
        OutboxSchema schema = OutboxSchema.builder().schema(db.schema()).outboxTable("status_shards").shards(4)
                .build();
        schema.migrate(db.dataSource());
        String t = schema.qualifiedOutboxTable();
        db.execute("INSERT INTO " + t + " (topic, partition_key, aggregate_type, aggregate_id, event_type, payload)"
                + " SELECT 'orders', 'k' || i, 'Order', 'o' || i, 'E', '{}' FROM generate_series(1, 40) i",
                // rows that are not pending count nowhere, however old
                "UPDATE " + t + " SET state = 'PUBLISHED', published_at = now(), created_at = now() - interval '1 day'"
                        + " WHERE id IN (SELECT max(id) FROM " + t + " GROUP BY shard)",
                "UPDATE " + t + " SET state = 'DEAD', created_at = now() - interval '1 day'"
                        + " WHERE partition_key IN ('k2', 'k3')",
                // each shard's first pending event is (shard + 1) hours old; the later ones are new
                "UPDATE " + t + " SET created_at = now() - (shard + 1) * interval '1 hour' WHERE id IN"
                        + " (SELECT min(id) FROM " + t + " WHERE state = 'PENDING' GROUP BY shard)");
        Map<Integer, Long> expected = new HashMap<>();
        try (Connection c = db.connect(); Statement st = c.createStatement();
                ResultSet rs = st.executeQuery("SELECT shard, count(*) FROM " + t + " WHERE state = 'PENDING'"
                        + " GROUP BY shard")) {
            while (rs.next()) {
                expected.put(rs.getInt(1), rs.getLong(2));
            }
        }
        assertThat(expected).as("the keys cover every shard").hasSize(4);

        OutboxStatus status = OutboxStatus.snapshot(db.dataSource(), schema);

        assertThat(status.pendingByShard()).containsExactlyInAnyOrderEntriesOf(expected);
        assertThat(status.shards()).extracting(OutboxStatus.ShardStatus::shard).containsExactly(0, 1, 2, 3);
        for (OutboxStatus.ShardStatus s : status.shards()) {
            Duration head = Duration.ofHours(s.shard() + 1);
            assertThat(s.oldestPendingAge()).as("shard " + s.shard()).isBetween(head, head.plusMinutes(10));
        }
        assertThat(OutboxStatus.shards(db.dataSource(), schema)).extracting(OutboxStatus.ShardStatus::pending)
                .containsExactlyElementsOf(status.shards().stream().map(OutboxStatus.ShardStatus::pending).toList());
        assertThat(status.toText()).contains("pending by shard: {0=" + expected.get(0) + ", 1=")
                .containsPattern("oldest by shard: \\{0=360\\d\\.\\d s, 1=720\\d\\.\\d s, 2=1080\\d\\.\\d s, "
                        + "3=1440\\d\\.\\d s\\}");

        db.execute("UPDATE " + t + " SET state = 'PUBLISHED', published_at = now() WHERE state = 'PENDING'");
        OutboxStatus drained = OutboxStatus.snapshot(db.dataSource(), schema);
        assertThat(drained.shards()).isEmpty();
        assertThat(drained.toText()).doesNotContain("by shard");
    }
}
