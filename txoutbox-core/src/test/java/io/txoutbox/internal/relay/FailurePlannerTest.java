package io.txoutbox.internal.relay;

import static org.assertj.core.api.Assertions.assertThat;

import io.txoutbox.FailurePolicy;
import io.txoutbox.RetryPolicy;
import io.txoutbox.internal.pg.EventState;
import io.txoutbox.spi.OutboxRecord;
import io.txoutbox.spi.PartitionUnavailableException;
import io.txoutbox.spi.SendResult;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/** The relay's failure rules without a database or a transport ({@link FailurePlanner}). */
class FailurePlannerTest {

    private static final long NOW = Instant.parse("2026-12-01T12:00:00Z").toEpochMilli();
    /** No jitter: 1 s, 2 s, 4 s … up to a minute; three attempts. */
    private static final RetryPolicy RETRY = new RetryPolicy(3, Duration.ofSeconds(1), Duration.ofMinutes(1), 2.0, 0);
    private static final long OUTAGE_DELAY_MS = 800;

    private static OutboxRecord event(long id, String key, int attempts) {
        return new OutboxRecord(id, UUID.randomUUID(), "orders", key, null, null, null, "E", new byte[0], true,
                Map.of(), Instant.ofEpochMilli(NOW - 16_000), attempts);
    }

    private static FailurePlanner planner(FailurePolicy policy) {
        return new FailurePlanner("test-0", RETRY, policy, Duration.ofSeconds(30), false);
    }

    private static FailurePlan plan(FailurePolicy policy, List<OutboxRecord> batch, SendResult... results) {
        return planner(policy).plan(batch, List.of(results), OUTAGE_DELAY_MS, NOW);
    }

    private static SendResult retriable() {
        return SendResult.retriable(new IllegalStateException("try again"));
    }

    @Test
    void the_first_failure_of_a_key_decides_and_its_later_events_just_wait() {
        FailurePlan plan = plan(FailurePolicy.PARK_KEY,
                List.of(event(1, "a", 0), event(2, "a", 0), event(3, "b", 0), event(4, "a", 2)),
                retriable(), SendResult.permanent(new IllegalStateException("bad")), SendResult.delivered(),
                SendResult.permanent(new IllegalStateException("bad")));
        assertThat(plan.published).containsExactly(3L);
        assertThat(plan.ids).as("one update per failed key: its first failure").containsExactly(1L);
        assertThat(plan.states).containsExactly(EventState.PENDING);
        assertThat(plan.delays).containsExactly(1_000L);
        assertThat(plan.addAttempts).containsExactly(1);
        assertThat(plan.errors.get(0)).isEqualTo("IllegalStateException: try again");
        assertThat(plan.failedAttempts).isEqualTo(1);
        assertThat(plan.parked).isZero();
        assertThat(plan.outage).isFalse();
    }

    @Test
    void collateral_counts_nothing_and_does_not_decide_for_its_key() {
        FailurePlan plan = plan(FailurePolicy.PARK_KEY, List.of(event(1, "a", 0), event(2, "a", 0), event(3, null, 0)),
                SendResult.collateral(new IllegalStateException("rolled back")), retriable(),
                SendResult.collateral(new IllegalStateException("rolled back")));
        assertThat(plan.collateral).isEqualTo(2);
        assertThat(plan.ids).as("the key's first real failure decides").containsExactly(2L);
        assertThat(plan.failedAttempts).isEqualTo(1);
        assertThat(plan.published).isEmpty();
        assertThat(plan.outage).isFalse();
    }

    @Test
    void unavailable_counts_no_attempt_backs_off_with_the_lane_and_makes_an_outage_when_nothing_got_through() {
        OutboxRecord r = event(1, "a", RETRY.maxAttempts() - 1); // one more attempt would park it
        FailurePlan plan = plan(FailurePolicy.PARK_KEY, List.of(r),
                SendResult.unavailable(new IllegalStateException("broker down")));
        assertThat(plan.states).containsExactly(EventState.PENDING);
        assertThat(plan.addAttempts).containsExactly(0);
        assertThat(plan.delays).containsExactly(OUTAGE_DELAY_MS);
        assertThat(plan.errors.get(0)).startsWith("transport unavailable: ");
        assertThat(plan.unavailable).isEqualTo(1);
        assertThat(plan.failedAttempts).isZero();
        assertThat(plan.parked).isZero();
        assertThat(plan.outage).isTrue();

        FailurePlan partly = plan(FailurePolicy.PARK_KEY, List.of(event(1, "a", 0), event(2, "b", 0)),
                SendResult.unavailable(new IllegalStateException("broker down")), SendResult.delivered());
        assertThat(partly.outage).as("something got through").isFalse();
    }

    @Test
    void a_sick_partition_backs_its_keys_off_by_their_age_and_is_no_outage() {
        SendResult sick = new SendResult.Failed(SendResult.Kind.UNAVAILABLE,
                new PartitionUnavailableException("orders-0", "no leader", null));
        FailurePlan plan = plan(FailurePolicy.PARK_KEY, List.of(event(1, "a", 0)), sick);
        assertThat(plan.delays).as("an eighth of its 16 s age").containsExactly(2_000L);
        assertThat(plan.addAttempts).containsExactly(0);
        assertThat(plan.outage).isFalse();
    }

    @Test
    void each_key_backs_off_on_its_own_retry_delay() {
        FailurePlan plan = plan(FailurePolicy.PARK_KEY, List.of(event(1, "a", 0), event(2, "b", 1)), retriable(),
                retriable());
        assertThat(plan.ids).containsExactly(1L, 2L);
        assertThat(plan.delays).as("after the first and the second attempt").containsExactly(1_000L, 2_000L);
        assertThat(plan.states).containsExactly(EventState.PENDING, EventState.PENDING);
    }

    @Test
    void exhausted_retries_park_the_key_under_park_key() {
        FailurePlan plan = plan(FailurePolicy.PARK_KEY, List.of(event(1, "a", RETRY.maxAttempts() - 1)),
                retriable());
        assertThat(plan.states).containsExactly(EventState.PARKED);
        assertThat(plan.delays).containsExactly(0L);
        assertThat(plan.addAttempts).containsExactly(1);
        assertThat(plan.parked).isEqualTo(1);
        assertThat(plan.deadLetters).isEmpty();
    }

    @Test
    void a_permanent_failure_goes_dead_at_once_and_to_the_dead_letter_list_under_dead_letter_and_continue() {
        OutboxRecord r = event(1, "a", 0);
        FailurePlan plan = plan(FailurePolicy.DEAD_LETTER_AND_CONTINUE, List.of(r),
                SendResult.permanent(new IllegalArgumentException("too large")));
        assertThat(plan.states).containsExactly(EventState.DEAD);
        assertThat(plan.dead).isEqualTo(1);
        assertThat(plan.parked).isZero();
        assertThat(plan.deadLetters).extracting(FailurePlan.DeadLetter::record).containsExactly(r);
    }

    @Test
    void a_failed_dead_letter_send_reverts_dead_to_pending_with_the_attempt_and_a_backoff() {
        OutboxRecord r = event(1, "a", 1);
        FailurePlanner planner = planner(FailurePolicy.DEAD_LETTER_AND_CONTINUE);
        FailurePlan plan = planner.plan(List.of(r), List.of(SendResult.permanent(new IllegalStateException("bad"))),
                OUTAGE_DELAY_MS, NOW);
        planner.deadLetterFailed(plan, r, "broker down");
        assertThat(plan.states).containsExactly(EventState.PENDING);
        assertThat(plan.addAttempts).containsExactly(1);
        assertThat(plan.delays).as("the backoff after its second attempt").containsExactly(2_000L);
        assertThat(plan.errors).containsExactly("dead-letter topic send failed; will retry: broker down");
        assertThat(plan.dead).isZero();
        assertThat(plan.update().states()).containsExactly("PENDING");
    }

    @Test
    void a_delivery_after_its_key_failed_breaks_the_ordering_contract_and_is_still_published() {
        FailurePlan plan = plan(FailurePolicy.PARK_KEY, List.of(event(1, "a", 0), event(2, "a", 0)), retriable(),
                SendResult.delivered());
        assertThat(plan.contractBreaks).isEqualTo(1);
        assertThat(plan.published).containsExactly(2L);
    }
}
