package io.txoutbox;

import static org.assertj.core.api.Assertions.assertThat;

import io.txoutbox.testing.postgres.PostgresExtension;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

class InboxRetentionIT {

    @RegisterExtension
    static final PostgresExtension postgres = new PostgresExtension();

    @Test
    void purge_deletes_only_old_processed_rows_in_batches() {
        OutboxSchema schema = OutboxSchema.builder().schema(postgres.database().schema()).build();
        schema.migrate(postgres.database().dataSource());
        var db = postgres.database();
        db.execute(
                "INSERT INTO processed_event (consumer, event_id, processed_at) SELECT 'c', gen_random_uuid(),"
                        + " now() - interval '2 days' FROM generate_series(1, 25)",
                "INSERT INTO processed_event (consumer, event_id, processed_at) SELECT 'c', gen_random_uuid(),"
                        + " now() - interval '10 minutes' FROM generate_series(1, 7)",
                "INSERT INTO applied_version (consumer, aggregate_type, aggregate_id, version, applied_at)"
                        + " VALUES ('c', 'Order', '1', 3, now() - interval '30 days')",
                // inbox: old processed (deleted), recent processed, and old rows in every other state, discarded too (kept)
                "INSERT INTO inbox_event (consumer, event_id, partition_key, state, received_at, processed_at)"
                        + " SELECT 'c', gen_random_uuid(), 'k', 'PROCESSED', now() - interval '3 days',"
                        + " now() - interval '2 days' FROM generate_series(1, 11)",
                "INSERT INTO inbox_event (consumer, event_id, partition_key, state, processed_at)"
                        + " SELECT 'c', gen_random_uuid(), 'k', 'PROCESSED', now() - interval '5 minutes'"
                        + " FROM generate_series(1, 4)",
                "INSERT INTO inbox_event (consumer, event_id, partition_key, state, received_at)"
                        + " SELECT 'c', gen_random_uuid(), 'k', s, now() - interval '3 days'"
                        + " FROM unnest(ARRAY['PENDING', 'PARKED', 'DEAD', 'DISCARDED']) s");
        InboxAdmin.Purged purged = InboxAdmin.create(db.dataSource(), schema)
                .purge(Duration.ofDays(1), Duration.ofHours(1), 4);
        assertThat(purged.processedEvents()).isEqualTo(25);
        assertThat(purged.inboxEvents()).isEqualTo(11);
        assertThat(db.queryLong("SELECT count(*) FROM processed_event")).isEqualTo(7);
        assertThat(db.queryLong("SELECT count(*) FROM processed_event WHERE processed_at < now() - interval '1 day'"))
                .isZero();
        assertThat(db.queryLong("SELECT count(*) FROM inbox_event WHERE state = 'PROCESSED'")).isEqualTo(4);
        assertThat(db.queryLong("SELECT count(*) FROM inbox_event WHERE state <> 'PROCESSED'")).isEqualTo(4);
        assertThat(db.queryLong("SELECT count(*) FROM applied_version")).isEqualTo(1);
    }
}
