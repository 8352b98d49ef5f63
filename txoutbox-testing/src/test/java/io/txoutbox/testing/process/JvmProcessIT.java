package io.txoutbox.testing.process;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import java.nio.file.Files;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(60)
class JvmProcessIT {

    private static final Duration WAIT = Duration.ofSeconds(20);
    private static final String HOOK = "after-ack-before-mark";

    @Test
    void killHookPrintsItsLineThenTheProcessDiesAtThatHit() {
        try (JvmProcess p = JvmProcess.builder(HookedMain.class).args(HOOK, "5").hook(HOOK, "kill", 2).start()) {
            FaultHooks.Fired fired = p.awaitHook(HOOK, WAIT);

            assertThat(fired.action()).isEqualTo(FaultHooks.Action.KILL);
            assertThat(fired.pid()).isEqualTo(p.pid());
            assertThat(p.awaitExit(WAIT)).isEqualTo(128 + 9);
            assertThat(p.lines()).contains("iteration 1", "iteration 2")
                    .doesNotContain("iteration 3", "FINISHED")
                    .filteredOn(l -> l.startsWith("TXOUTBOX-HOOK")).containsExactly(
                            "TXOUTBOX-HOOK " + HOOK + " kill pid=" + p.pid());
        }
    }

    @Test
    void stopHookFreezesTheProcessUntilResumed() {
        try (JvmProcess p = JvmProcess.builder(HookedMain.class).args(HOOK, "3").hook(HOOK, "stop").start()) {
            assertThat(p.awaitHook(HOOK, WAIT).action()).isEqualTo(FaultHooks.Action.STOP);

            await().atMost(Duration.ofSeconds(5)).until(p::isStopped);
            assertThat(p.state()).contains('T');
            assertThat(p.isAlive()).isTrue();
            assertThat(p.lines()).contains("iteration 1").doesNotContain("iteration 2", "FINISHED");

            p.resume();

            assertThat(p.awaitExit(WAIT)).isZero();
            assertThat(p.lines()).contains("iteration 2", "iteration 3", "FINISHED");
        }
    }

    @Test
    void awaitLinePassesPropertiesEnvAndArgsAndSeesStderr() {
        try (JvmProcess p = JvmProcess.builder(SleeperMain.class).systemProperty("sleeper.prop", "p1")
                .env("SLEEPER_ENV", "e1").args("a", "b").start()) {
            String line = p.awaitLine("^READY ", WAIT);

            assertThat(line).isEqualTo("READY prop=p1 env=e1 args=a|b");
            assertThat(p.awaitLine(l -> l.equals("stderr works"), WAIT)).isEqualTo("stderr works");
        }
    }

    @Test
    void awaitLineFailsFastWhenTheProcessExitsWithoutTheLine() {
        try (JvmProcess p = JvmProcess.builder(ExitingMain.class).start()) {
            long start = System.nanoTime();
            assertThatThrownBy(() -> p.awaitLine("never printed", Duration.ofSeconds(30)))
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("without a matching line")
                    .hasMessageContaining("bye");
            assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(15));
            assertThat(p.awaitExit(WAIT)).isEqualTo(3);
        }
    }

    @Test
    void awaitLineTimesOut() {
        try (JvmProcess p = JvmProcess.builder(SleeperMain.class).start()) {
            p.awaitLine("^READY", WAIT);
            assertThatThrownBy(() -> p.awaitLine("never printed", Duration.ofMillis(300)))
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("no matching line within");
            assertThat(p.isAlive()).isTrue();
        }
    }

    @Test
    void killEndsASleepingChildWithoutShutdownHooks() {
        try (JvmProcess p = JvmProcess.builder(SleeperMain.class).start()) {
            p.awaitLine("^READY", WAIT);

            p.kill();

            assertThat(p.isAlive()).isFalse();
            assertThat(p.exitCode()).hasValue(128 + 9);
            assertThat(p.state()).isEmpty();
            assertThat(p.lines()).doesNotContain("shutdown hook ran");
        }
    }

    @Test
    void pauseResumeAndTerminate() {
        try (JvmProcess p = JvmProcess.builder(SleeperMain.class).start()) {
            p.awaitLine("^READY", WAIT);

            p.pause();
            assertThat(p.isStopped()).isTrue();
            p.resume();
            await().atMost(Duration.ofSeconds(5)).until(() -> !p.isStopped());

            p.terminate();
            assertThat(p.awaitExit(WAIT)).isEqualTo(128 + 15);
            assertThat(p.lines()).contains("shutdown hook ran");
        }
    }

    @Test
    void closeKillsIsIdempotentAndDeletesTheDefaultLogFile() throws Exception {
        JvmProcess p = JvmProcess.builder(SleeperMain.class).start();
        p.awaitLine("^READY", WAIT);
        assertThat(Files.readString(p.logFile())).contains("READY");

        p.close();
        p.close();

        assertThat(p.isAlive()).isFalse();
        assertThat(p.logFile()).doesNotExist();
    }

    @Test
    void hookBuilderWritesTheConventionProperty() {
        JvmProcess.Builder builder = JvmProcess.builder(SleeperMain.class).hook("a", "kill").hook("b", "stop", 3);

        assertThat(builder.command()).contains("-Dtxoutbox.hooks=a=kill,b=stop@3");
    }
}
