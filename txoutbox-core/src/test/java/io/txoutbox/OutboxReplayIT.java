package io.txoutbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.txoutbox.OutboxReplay.Outcome;
import io.txoutbox.OutboxReplay.SkipReason;
import io.txoutbox.OutboxReplay.Skipped;
import io.txoutbox.OutboxReplay.WhenUnpublished;
import io.txoutbox.spi.OutboxRecord;
import io.txoutbox.spi.SendResult;
import io.txoutbox.spi.Transport;
import io.txoutbox.testing.postgres.PostgresExtension;
import io.txoutbox.testing.postgres.TestDatabase;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Replay over rows in every state, written with SQL (no relay): what is replayed, what is reported, what is waited
 * for. The transport keeps what it gets and refuses events of type {@code TooBig} for good.
 */
class OutboxReplayIT {

    @RegisterExtension
    static final PostgresExtension postgres = new PostgresExtension();

    private TestDatabase db;
    private OutboxSchema schema;
    private String t;
    private final List<UUID> sent = new CopyOnWriteArrayList<>();

    private final Transport transport = new Transport() {
        @Override
        public CompletionStage<List<SendResult>> send(String lane, List<OutboxRecord> batch) {
            List<SendResult> results = new ArrayList<>();
            for (OutboxRecord r : batch) {
                if (r.eventType().equals("TooBig")) {
                    results.add(SendResult.permanent(new IllegalArgumentException("record too large")));
                } else {
                    sent.add(r.eventId());
                    results.add(SendResult.delivered());
                }
            }
            return CompletableFuture.completedFuture(results);
        }

        @Override
        public void close() {
        }
    };

    @BeforeEach
    void setUp(TestInfo info) {
        db = postgres.database();
        schema = OutboxSchema.builder().schema(db.schema())
                .outboxTable("rp_" + Math.abs(info.getTestMethod().orElseThrow().getName().hashCode())).build();
        schema.migrate(db.dataSource());
        t = schema.qualifiedOutboxTable();
    }

    /** One row in the given state; returns its event id. */
    private UUID row(String state, String type) {
        UUID id = UUID.randomUUID();
        db.execute("INSERT INTO " + t + " (event_id, topic, partition_key, aggregate_type, aggregate_id, event_type,"
                + " payload, state, published_at) VALUES ('" + id + "', 'orders', 'k', 'Order', 'k', '" + type
                + "', '{}', '" + state + "', " + (state.equals("PUBLISHED") ? "now()" : "NULL") + ")");
        return id;
    }

    private void setState(UUID eventId, String state) {
        db.execute("UPDATE " + t + " SET state = '" + state + "'"
                + (state.equals("PUBLISHED") ? ", published_at = now()" : "") + " WHERE event_id = '" + eventId + "'");
    }

    private OutboxReplay.Builder replay(String name) {
        return OutboxReplay.builder().dataSource(db.dataSource()).schema(schema).transport(transport).name(name);
    }

    @Test
    void report_lists_dead_discarded_unpublished_and_refused_events_exactly_and_replays_the_rest() {
        UUID p1 = row("PUBLISHED", "E");
        UUID dead = row("DEAD", "E");
        UUID p2 = row("PUBLISHED", "E");
        UUID discarded = row("DISCARDED", "E");
        UUID pending = row("PENDING", "E");
        UUID parked = row("PARKED", "E");
        UUID refused = row("PUBLISHED", "TooBig");
        UUID p3 = row("PUBLISHED", "E");

        OutboxReplay.Result result = replay("report").whenUnpublished(WhenUnpublished.REPORT).batchSize(3).build()
                .run();

        assertThat(result.outcome()).isEqualTo(Outcome.DONE);
        assertThat(result.done()).isTrue();
        assertThat(sent).containsExactly(p1, p2, p3);
        assertThat(result.replayed()).isEqualTo(3);
        assertThat(result.skipped()).isEqualTo(5);
        assertThat(result.skippedEvents()).extracting(Skipped::eventId)
                .containsExactly(dead, discarded, pending, parked, refused);
        assertThat(result.skippedEvents()).extracting(Skipped::reason).containsExactly(SkipReason.DEAD,
                SkipReason.DISCARDED, SkipReason.NOT_PUBLISHED, SkipReason.NOT_PUBLISHED, SkipReason.REFUSED);
        assertThat(result.skippedEvents()).extracting(Skipped::state)
                .containsExactly("DEAD", "DISCARDED", "PENDING", "PARKED", "PUBLISHED");
        assertThat(replay("report").build().progress().skipped()).isEqualTo(5);
    }

    @Test
    void wait_stops_at_a_pending_event_and_goes_on_in_order_once_it_is_published() throws Exception {
        UUID p1 = row("PUBLISHED", "E");
        UUID pending = row("PENDING", "E");
        UUID p2 = row("PUBLISHED", "E");
        OutboxReplay replay = replay("wait").waitTimeout(Duration.ofMinutes(1)).build();
        CompletableFuture<OutboxReplay.Result> run = CompletableFuture.supplyAsync(replay::run);
        await().atMost(Duration.ofSeconds(30)).until(() -> sent.contains(p1));
        assertThat(replay.progress().lastId()).as("checkpointed right before the pending event")
                .isEqualTo(db.queryLong("SELECT id - 1 FROM " + t + " WHERE event_id = '" + pending + "'"));
        assertThat(run).as("waits at the pending event").isNotDone();
        assertThat(sent).doesNotContain(p2);

        setState(pending, "PUBLISHED");
        OutboxReplay.Result result = run.get(30, TimeUnit.SECONDS);
        assertThat(result.outcome()).isEqualTo(Outcome.DONE);
        assertThat(sent).containsExactly(p1, pending, p2);
        assertThat(result.skippedEvents()).isEmpty();
    }

    @Test
    void an_event_waited_for_that_goes_dead_is_reported_and_the_replay_goes_on() throws Exception {
        UUID p1 = row("PUBLISHED", "E");
        UUID parked = row("PARKED", "E");
        UUID p2 = row("PUBLISHED", "E");
        OutboxReplay replay = replay("wait-dead").waitTimeout(Duration.ofMinutes(1)).build();
        CompletableFuture<OutboxReplay.Result> run = CompletableFuture.supplyAsync(replay::run);
        await().atMost(Duration.ofSeconds(30)).until(() -> sent.contains(p1));
        assertThat(run).isNotDone();
        setState(parked, "DEAD");
        OutboxReplay.Result result = run.get(30, TimeUnit.SECONDS);
        assertThat(result.outcome()).isEqualTo(Outcome.DONE);
        assertThat(sent).containsExactly(p1, p2);
        assertThat(result.skippedEvents()).extracting(Skipped::eventId, Skipped::reason)
                .containsExactly(org.assertj.core.groups.Tuple.tuple(parked, SkipReason.DEAD));
    }

    @Test
    void stop_ends_a_wait_and_the_next_run_resumes_at_the_event() throws Exception {
        UUID p1 = row("PUBLISHED", "E");
        UUID pending = row("PENDING", "E");
        OutboxReplay replay = replay("stop").waitTimeout(Duration.ofMinutes(1)).build();
        CompletableFuture<OutboxReplay.Result> run = CompletableFuture.supplyAsync(replay::run);
        await().atMost(Duration.ofSeconds(30)).until(() -> sent.contains(p1));
        replay.stop();
        OutboxReplay.Result stopped = run.get(30, TimeUnit.SECONDS);
        assertThat(stopped.outcome()).isEqualTo(Outcome.STOPPED);
        assertThat(stopped.done()).isFalse();
        setState(pending, "PUBLISHED");
        OutboxReplay.Result resumed = replay("stop").build().run();
        assertThat(resumed.outcome()).isEqualTo(Outcome.DONE);
        assertThat(sent).containsExactly(p1, pending);
    }

    @Test
    void the_new_settings_are_validated_naming_the_property() {
        assertThatThrownBy(() -> replay("x").whenUnpublished(null).build())
                .isInstanceOf(InvalidConfigurationException.class).hasMessageContaining("replay.whenUnpublished");
        assertThatThrownBy(() -> replay("x").waitTimeout(Duration.ZERO).build())
                .isInstanceOf(InvalidConfigurationException.class).hasMessageContaining("replay.waitTimeout");
        assertThat(OutboxReplay.DEFAULT_WHEN_UNPUBLISHED).isEqualTo(WhenUnpublished.WAIT);
    }
}
