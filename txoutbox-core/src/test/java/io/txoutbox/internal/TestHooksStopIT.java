package io.txoutbox.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.txoutbox.testing.process.FaultHooks;
import io.txoutbox.testing.process.JvmProcess;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Regression: a {@code stop} hook sent SIGSTOP and went on once {@code kill} had returned, so a stop that took effect
 * late let the process run past its hit: a fault test that froze a relay "between ack and mark" could find the mark
 * done. A CI run saw it in the harness's own copy of the hook (state T, yet "iteration 2" and "FINISHED" printed).
 * Forced here: the signal lands 500 ms after the hit ({@link TestHooks#STOP_DELAY_PROPERTY}).
 */
@Timeout(60)
class TestHooksStopIT {

    private static final Duration WAIT = Duration.ofSeconds(20);

    /** The child: args {@code <hook> <iterations>}; prints each iteration, hits the hook after it. */
    public static final class Main {
        public static void main(String[] args) {
            for (int i = 1; i <= Integer.parseInt(args[1]); i++) {
                System.out.println("iteration " + i);
                System.out.flush();
                TestHooks.hit(args[0]);
            }
            System.out.println("FINISHED");
            System.out.flush();
        }
    }

    @Test
    void a_stop_whose_signal_lands_late_still_holds_the_process_at_its_hit_until_resumed() {
        try (JvmProcess p = JvmProcess.builder(Main.class).args(TestHooks.AFTER_ACK_BEFORE_MARK, "3")
                .hook(TestHooks.AFTER_ACK_BEFORE_MARK, "stop")
                .systemProperty(TestHooks.STOP_DELAY_PROPERTY, "500").start()) {
            assertThat(p.awaitHook(TestHooks.AFTER_ACK_BEFORE_MARK, WAIT).action())
                    .isEqualTo(FaultHooks.Action.STOP);

            await().atMost(Duration.ofSeconds(10)).until(p::isStopped);
            assertThat(p.lines()).contains("iteration 1").doesNotContain("iteration 2", "FINISHED");

            p.resume();

            assertThat(p.awaitExit(WAIT)).isZero();
            assertThat(p.lines()).contains("iteration 2", "iteration 3", "FINISHED");
        }
    }
}
