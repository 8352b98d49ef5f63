package io.txoutbox.test;

import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

class InMemoryTransportTest {

    @Test
    void a_wait_that_times_out_says_where_the_relay_threads_are() throws Exception {
        CountDownLatch release = new CountDownLatch(1);
        Thread lane = new Thread(() -> waitsForThePool(release), "txoutbox-relay-test-0");
        lane.start();
        try {
            await().atMost(Duration.ofSeconds(10)).until(() -> lane.getState() == Thread.State.TIMED_WAITING);
            assertThatThrownBy(() -> new InMemoryTransport().awaitDelivered(r -> true, 1, Duration.ofMillis(50)))
                    .isInstanceOf(AssertionError.class)
                    .hasMessageContaining("expected 1 delivered record(s) matching the condition within PT0.05S, "
                            + "found 0 (delivered in all: 0)")
                    .hasMessageContaining("relay threads: [txoutbox-relay-test-0 ")
                    .hasMessageContaining("InMemoryTransportTest.waitsForThePool");
        } finally {
            release.countDown();
            lane.join(10_000);
        }
    }

    @Test
    void without_a_relay_thread_it_says_so() {
        assertThatThrownBy(() -> new InMemoryTransport().awaitDelivered(r -> true, 1, Duration.ofMillis(10)))
                .hasMessageEndingWith("; no relay lane thread runs in this JVM");
    }

    private static void waitsForThePool(CountDownLatch release) {
        try {
            release.await(60, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
