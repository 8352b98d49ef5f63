package io.txoutbox.test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.txoutbox.Outbox;
import io.txoutbox.OutboxHealth;
import io.txoutbox.OutboxMessage;
import io.txoutbox.OutboxSchema;
import io.txoutbox.OutboxStatus;
import io.txoutbox.PollingRelay;
import io.txoutbox.internal.progress.ProgressModels;
import io.txoutbox.spi.OutboxRecord;
import io.txoutbox.spi.SendResult;
import io.txoutbox.spi.Transport;
import io.txoutbox.testing.postgres.PostgresExtension;
import io.txoutbox.testing.postgres.TestDatabase;
import java.sql.Connection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletionStage;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The cursor progress model ({@code schema.progress=CURSOR}) on its own terms: the outbox table stays append-only on
 * the happy path, and a table switches from the row-state model to it and back — with the relays stopped for the way
 * back — losing nothing and sending nothing twice.
 */
class ProgressSwitchIT {

    @RegisterExtension
    static final PostgresExtension postgres = new PostgresExtension();

    private static final Duration WAIT = Duration.ofSeconds(60);
    private static final int KEYS = 20;

    private TestDatabase db;
    private OutboxSchema rows;
    private OutboxSchema cursor;
    private InMemoryTransport transport;
    private final List<UUID> written = new ArrayList<>();

    @BeforeEach
    void table(TestInfo test) {
        db = postgres.database();
        String table = "switch_" + Math.abs(test.getTestMethod().orElseThrow().getName().hashCode());
        rows = OutboxSchema.builder().schema(db.schema()).outboxTable(table).shards(8).build();
        cursor = OutboxSchema.builder().schema(db.schema()).outboxTable(table).shards(8)
                .progress(OutboxSchema.Progress.CURSOR).build();
        rows.migrate(db.dataSource());
        transport = new InMemoryTransport();
    }

    @Test
    void on_the_happy_path_no_published_row_is_written_again() throws Exception {
        try (PollingRelay relay = relay(cursor)) {
            write(cursor, 400);
            transport.awaitDelivered(r -> true, 400, WAIT);
            awaitNothingPending(cursor);
        }
        String t = cursor.qualifiedOutboxTable();
        assertThat(db.queryLong("SELECT count(*) FROM " + t + " WHERE xmax <> 0"))
                .as("rows updated, deleted or locked since their insert").isZero();
        assertThat(db.queryLong("SELECT count(*) FROM " + t + " WHERE state <> 'PENDING'")).isZero();
        assertThat(db.queryLong("SELECT count(*) FROM " + t + " o WHERE "
                + ProgressModels.of(cursor).published("o"))).isEqualTo(400);
        assertThat(db.queryLong("SELECT count(*) FROM \"" + db.schema() + "\".\"" + cursor.outboxTable()
                + "_progress\"")).as("one cursor per lane").isEqualTo(4);
        DeliveredEvents.of(transport.delivered()).assertCount(400).assertNoDuplicates();
        assertKeyOrder();
        assertThat(unpublished()).as("the unpublished events").isZero();
    }

    @Test
    void row_state_to_cursor_while_events_keep_coming() throws Exception {
        try (PollingRelay relay = relay(rows)) {
            write(rows, 200);
            transport.awaitDelivered(r -> true, 100, WAIT); // some published row by row, some still pending
        }
        try (PollingRelay relay = relay(cursor)) {
            write(cursor, 200);
            transport.awaitDelivered(r -> true, 400, WAIT);
            awaitNothingPending(cursor);
        }
        DeliveredEvents.of(transport.delivered()).assertCount(400).assertNoDuplicates();
        assertKeyOrder();
        assertThat(db.queryLong("SELECT count(*) FROM " + cursor.qualifiedOutboxTable() + " o WHERE "
                + ProgressModels.of(cursor).published("o"))).isEqualTo(400);
    }

    @Test
    void cursor_to_row_state_is_refused_until_the_table_is_converted() throws Exception {
        try (PollingRelay relay = relay(cursor)) {
            write(cursor, 200);
            transport.awaitDelivered(r -> true, 200, WAIT);
        }
        write(rows, 10);
        assertThat(unpublished()).as("the unpublished events, on cursors").isEqualTo(10);
        try (PollingRelay refused = relay(rows)) {
            // a configuration no retry mends: the relay stops once, says why and how to fix it, and health shows it
            await().atMost(WAIT).until(() -> refused.failure().isPresent());
            assertThat(refused.failure().orElseThrow().getMessage()).contains("schema.progress=CURSOR")
                    .contains("convertProgressToRowState");
            long errors = refused.stats().loopErrors();
            Thread.sleep(1_000); // long enough for several error backoffs (100 ms, doubling) of a lane that retried
            assertThat(refused.stats().loopErrors()).as("no lane goes on retrying").isEqualTo(errors)
                    .isLessThanOrEqualTo(4);
            assertThat(refused.lanes()).as("every lane let go of its lease").isEmpty();
            OutboxHealth.Result health = OutboxHealth.builder().dataSource(db.dataSource()).schema(rows)
                    .relay(refused).build().check();
            assertThat(health.up()).isFalse();
            assertThat(health.reasons()).anyMatch(r -> r.contains("convertProgressToRowState"));
            assertThat(refused.stats().published()).as("a row-state relay on a table with cursors sends nothing")
                    .isZero();
        }
        long marked = rows.convertProgressToRowState(db.dataSource());
        assertThat(marked).isEqualTo(200);
        assertThat(rows.convertProgressToRowState(db.dataSource())).as("idempotent").isZero();
        assertThat(unpublished()).as("the unpublished events, row by row").isEqualTo(10);
        try (PollingRelay relay = relay(rows)) {
            write(rows, 10);
            transport.awaitDelivered(r -> true, 220, WAIT);
            await().atMost(WAIT).until(() -> OutboxStatus.pendingCount(db.dataSource(), rows) == 0);
        }
        DeliveredEvents.of(transport.delivered()).assertCount(220).assertNoDuplicates();
        assertKeyOrder();
        assertThat(db.queryLong("SELECT count(*) FROM " + rows.qualifiedOutboxTable()
                + " WHERE state = 'PUBLISHED' AND published_at IS NOT NULL")).isEqualTo(220);
    }

    /** A relay on {@code schema}, sending to the test's transport through a view the relay's close leaves open. */
    private PollingRelay relay(OutboxSchema schema) {
        InMemoryTransport shared = transport;
        Transport view = new Transport() {
            @Override
            public CompletionStage<List<SendResult>> send(String lane, List<OutboxRecord> batch) {
                return shared.send(lane, batch);
            }
        };
        return PollingRelay.builder().dataSource(db.dataSource()).schema(schema).transport(view).lanes(4)
                .pollInterval(Duration.ofMillis(20)).build().start();
    }

    /** {@code n} events over {@link #KEYS} keys, a few per transaction, with seq numbers per key in the type. */
    private void write(OutboxSchema schema, int n) throws Exception {
        Outbox outbox = Outbox.builder().schema(schema).build();
        for (int i = 0; i < n; i += 5) {
            try (Connection c = db.connect()) {
                c.setAutoCommit(false);
                for (int j = i; j < Math.min(n, i + 5); j++) {
                    int seq = written.size();
                    written.addAll(outbox.publish(c, OutboxMessage.builder().topic("orders")
                            .aggregate("Order", "k" + seq % KEYS).eventType("E" + seq)
                            .jsonPayload("{\"seq\":" + seq + "}").build()));
                }
                c.commit();
            }
        }
    }

    /** Rows of the function {@code <outbox>_unpublished()} (schema version 11), the same for both models. */
    private long unpublished() {
        return db.queryLong("SELECT count(*) FROM \"" + db.schema() + "\".\"" + rows.outboxTable()
                + "_unpublished\"()");
    }

    /** The cursors follow the deliveries by a settlement or two. */
    private void awaitNothingPending(OutboxSchema schema) {
        await().atMost(WAIT).until(() -> OutboxStatus.pendingCount(db.dataSource(), schema) == 0);
    }

    /** Every key's events in the order they were written. */
    private void assertKeyOrder() {
        for (int k = 0; k < KEYS; k++) {
            String key = "k" + k;
            List<Integer> seqs = new ArrayList<>();
            for (OutboxRecord r : transport.delivered()) {
                if (key.equals(r.key())) {
                    seqs.add(Integer.parseInt(r.eventType().substring(1)));
                }
            }
            assertThat(seqs).as("key %s", key).isSorted();
        }
    }
}
