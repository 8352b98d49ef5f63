package io.txoutbox.internal.lane;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.SynchronousQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

class ThreadPlaceTest {

    @Test
    void names_the_frame_that_waits_past_the_jdks_parking_plumbing() throws Exception {
        SynchronousQueue<Object> handoff = new SynchronousQueue<>();
        CountDownLatch done = new CountDownLatch(1);
        Thread waiter = new Thread(() -> waitsForAConnection(handoff, done), "place-test");
        waiter.start();
        try {
            await().atMost(Duration.ofSeconds(10)).until(() -> waiter.getState() == Thread.State.TIMED_WAITING);

            String place = ThreadPlace.of(waiter, 3);

            assertThat(place).startsWith("TIMED_WAITING in SynchronousQueue.poll:")
                    .contains(" ← ThreadPlaceTest.waitsForAConnection:")
                    .doesNotContain("LockSupport").doesNotContain("Unsafe")
                    .endsWith(" ← …");
            assertThat(place.split(" ← ")).hasSize(4); // three frames and the ellipsis
        } finally {
            handoff.offer("go", 10, TimeUnit.SECONDS);
            assertThat(done.await(10, TimeUnit.SECONDS)).isTrue();
        }
    }

    @Test
    void a_thread_without_frames_says_whether_it_ended_or_never_started() throws Exception {
        Thread never = new Thread(() -> { }, "never");
        assertThat(ThreadPlace.of(never, 5)).isEqualTo("NEW (no frames: not started)");
        never.start();
        never.join();
        assertThat(ThreadPlace.of(never, 5)).isEqualTo("TERMINATED (no frames: ended)");
    }

    @Test
    void a_short_stack_is_shown_whole_without_an_ellipsis() {
        StackTraceElement[] stack = {
                new StackTraceElement("java.lang.Thread", "sleep0", null, -2),
                new StackTraceElement("io.txoutbox.internal.lane.LaneLoop", "pause", "LaneLoop.java", 12),
                new StackTraceElement("java.lang.Thread", "run", "Thread.java", 833)};

        assertThat(ThreadPlace.describe(Thread.State.TIMED_WAITING, stack, 8))
                .isEqualTo("TIMED_WAITING in LaneLoop.pause:12 ← Thread.run:833");
    }

    private static void waitsForAConnection(SynchronousQueue<Object> handoff, CountDownLatch done) {
        try {
            handoff.poll(60, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        done.countDown();
    }
}
