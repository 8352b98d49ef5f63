package io.txoutbox.testing.process;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(30)
class RandomKillerTest {

    private final AtomicBoolean up = new AtomicBoolean(true);
    private final AtomicInteger kills = new AtomicInteger();
    private final AtomicInteger restarts = new AtomicInteger();

    private void kill() {
        assertThat(up.getAndSet(false)).as("killed while already down").isTrue();
        kills.incrementAndGet();
    }

    private void restart() {
        assertThat(up.getAndSet(true)).as("restarted while up").isFalse();
        restarts.incrementAndGet();
    }

    @Test
    void stopsAfterMaxKillsAlternatingKillAndRestart() {
        try (RandomKiller killer = RandomKiller.builder().seed(7).kill(this::kill).restart(this::restart)
                .upTime(Duration.ofMillis(5), Duration.ofMillis(30)).downTime(Duration.ZERO, Duration.ofMillis(10))
                .maxKills(4).maxDuration(Duration.ofSeconds(20)).start()) {
            killer.awaitDone(Duration.ofSeconds(20));

            assertThat(kills).hasValue(4);
            assertThat(restarts).hasValue(4);
            assertThat(up).isTrue();
            assertThat(killer.events()).extracting(RandomKiller.Event::kind).containsExactly(
                    RandomKiller.Kind.KILL, RandomKiller.Kind.RESTART, RandomKiller.Kind.KILL, RandomKiller.Kind.RESTART,
                    RandomKiller.Kind.KILL, RandomKiller.Kind.RESTART, RandomKiller.Kind.KILL, RandomKiller.Kind.RESTART);
        }
    }

    @Test
    void stopsAtMaxDurationAndLeavesTheTargetUp() {
        long start = System.nanoTime();
        try (RandomKiller killer = RandomKiller.builder().seed(1).kill(this::kill).restart(this::restart)
                .upTime(Duration.ofMillis(50), Duration.ofMillis(100)).downTime(Duration.ofMillis(10), Duration.ofMillis(20))
                .maxKills(1_000).maxDuration(Duration.ofMillis(600)).start()) {
            killer.awaitDone(Duration.ofSeconds(10));

            assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(5));
            assertThat(kills.get()).isBetween(1, 12);
            assertThat(restarts.get()).isEqualTo(kills.get());
            assertThat(up).isTrue();
        }
    }

    @Test
    void closeDuringDownTimeRestartsTheTarget() {
        RandomKiller killer = RandomKiller.builder().kill(this::kill).restart(this::restart)
                .upTime(Duration.ZERO, Duration.ZERO).downTime(Duration.ofSeconds(30), Duration.ofSeconds(30))
                .maxKills(5).start();
        await().atMost(Duration.ofSeconds(5)).until(() -> kills.get() == 1);

        killer.close();
        killer.close();

        assertThat(killer.isDone()).isTrue();
        assertThat(restarts).hasValue(1);
        assertThat(up).isTrue();
    }

    @Test
    void aFailingKillEndsTheScheduleAndIsReported() {
        try (RandomKiller killer = RandomKiller.builder().kill(() -> {
                    throw new IllegalStateException("boom");
                }).restart(this::restart).upTime(Duration.ZERO, Duration.ZERO).start()) {
            assertThatThrownBy(() -> killer.awaitDone(Duration.ofSeconds(5)))
                    .hasMessageContaining("failed").hasRootCauseMessage("boom");
        }
    }

    @Test
    void rejectsBadBounds() {
        assertThatThrownBy(() -> RandomKiller.builder().upTime(Duration.ofSeconds(2), Duration.ofSeconds(1)))
                .hasMessageContaining("randomKiller.upTime");
        assertThatThrownBy(() -> RandomKiller.builder().maxKills(0)).hasMessageContaining("randomKiller.maxKills");
    }
}
