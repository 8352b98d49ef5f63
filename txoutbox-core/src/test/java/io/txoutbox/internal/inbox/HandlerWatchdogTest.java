package io.txoutbox.internal.inbox;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import org.junit.jupiter.api.Test;

class HandlerWatchdogTest {

    @Test
    void interrupts_a_handler_past_its_budget_and_clears_its_own_interrupt_when_disarmed() {
        try (HandlerWatchdog watchdog = new HandlerWatchdog("test")) {
            HandlerWatchdog.Ticket ticket = watchdog.arm(Duration.ofMillis(50));
            boolean interrupted = false;
            try {
                Thread.sleep(10_000);
            } catch (InterruptedException e) {
                interrupted = true;
            }
            assertThat(interrupted).as("the sleep was interrupted").isTrue();
            assertThat(ticket.disarm()).as("ran out").isTrue();
            assertThat(Thread.currentThread().isInterrupted()).isFalse();
        }
    }

    @Test
    void a_handler_within_its_budget_is_never_interrupted_not_even_after_it_returned() throws Exception {
        try (HandlerWatchdog watchdog = new HandlerWatchdog("test")) {
            HandlerWatchdog.Ticket ticket = watchdog.arm(Duration.ofMillis(100));
            assertThat(ticket.disarm()).isFalse();
            Thread.sleep(300); // past the budget: a disarmed ticket must not fire
            assertThat(Thread.currentThread().isInterrupted()).isFalse();
        }
    }

    @Test
    void a_closed_watchdog_still_hands_out_tickets_that_never_fire() {
        HandlerWatchdog watchdog = new HandlerWatchdog("test");
        watchdog.close();
        assertThat(watchdog.arm(Duration.ofMillis(1)).disarm()).isFalse();
    }
}
