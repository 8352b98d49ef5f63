package io.txoutbox.internal;

import static org.assertj.core.api.Assertions.assertThat;

import io.txoutbox.FailurePolicy;
import io.txoutbox.RetryPolicy;
import java.time.Duration;
import org.junit.jupiter.api.Test;

class FailureRuleTest {

    private static final RetryPolicy RETRY = new RetryPolicy(3, Duration.ofSeconds(1), Duration.ofMinutes(1), 2.0, 0);

    @Test
    void retries_while_attempts_remain_then_the_failure_policy_decides() {
        assertThat(FailureRule.after(1, false, RETRY, FailurePolicy.PARK_KEY)).isEqualTo(FailureRule.RETRY);
        assertThat(FailureRule.after(2, false, RETRY, FailurePolicy.PARK_KEY)).isEqualTo(FailureRule.RETRY);
        assertThat(FailureRule.after(3, false, RETRY, FailurePolicy.PARK_KEY)).isEqualTo(FailureRule.PARK);
        assertThat(FailureRule.after(3, false, RETRY, FailurePolicy.DEAD_LETTER_AND_CONTINUE))
                .isEqualTo(FailureRule.DEAD);
    }

    @Test
    void a_permanent_failure_skips_the_retries() {
        assertThat(FailureRule.after(1, true, RETRY, FailurePolicy.PARK_KEY)).isEqualTo(FailureRule.PARK);
        assertThat(FailureRule.after(1, true, RETRY, FailurePolicy.DEAD_LETTER_AND_CONTINUE))
                .isEqualTo(FailureRule.DEAD);
    }

    @Test
    void only_a_retry_waits_and_each_outcome_names_its_state() {
        assertThat(FailureRule.RETRY.delayMs(2, RETRY)).isEqualTo(2_000);
        assertThat(FailureRule.PARK.delayMs(3, RETRY)).isZero();
        assertThat(FailureRule.DEAD.delayMs(3, RETRY)).isZero();
        assertThat(FailureRule.RETRY.state()).isEqualTo("PENDING");
        assertThat(FailureRule.PARK.state()).isEqualTo("PARKED");
        assertThat(FailureRule.DEAD.state()).isEqualTo("DEAD");
        assertThat(FailureRule.why(3, false)).isEqualTo("failed 3 times");
        assertThat(FailureRule.why(1, true)).isEqualTo("failed permanently");
    }
}
