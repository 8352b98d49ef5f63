package io.txoutbox.internal.inbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;

import io.txoutbox.InboxWorkerConfig;
import io.txoutbox.spi.InboxListener;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class GuardedInboxListenerTest {

    private static final class Throwing implements InboxListener {
        final List<String> calls = new ArrayList<>();

        private void fail(String what) {
            calls.add(what);
            throw new IllegalStateException("listener bug in " + what);
        }

        @Override
        public void workerStarted(InboxWorkerConfig config) {
            fail("workerStarted");
        }

        @Override
        public void batchCompleted(int size, long claimNanos, long handleNanos, long markNanos) {
            fail("batchCompleted");
        }

        @Override
        public void processed(String eventType, long handlerNanos, long receiveToProcessedNanos) {
            fail("processed");
        }

        @Override
        public void handlerFailed(String eventType, FailureKind kind) {
            fail("handlerFailed");
        }

        @Override
        public void keyParked(String eventType) {
            throw new StackOverflowError("not even an Exception");
        }

        @Override
        public void deadLettered(String eventType) {
            fail("deadLettered");
        }

        @Override
        public void loopFailed(Throwable error) {
            fail("loopFailed");
        }
    }

    @Test
    void whatever_a_callback_throws_is_caught_and_counted() {
        Throwing delegate = new Throwing();
        GuardedInboxListener guarded = new GuardedInboxListener(delegate, "inbox");
        assertThatCode(() -> {
            guarded.workerStarted(null);
            guarded.batchCompleted(1, 1, 1, 1);
            guarded.processed("OrderCreated", 1, 1);
            guarded.handlerFailed("OrderCreated", InboxListener.FailureKind.TRANSIENT);
            guarded.keyParked("OrderCreated");
            guarded.deadLettered(null);
            guarded.loopFailed(new RuntimeException("db"));
        }).doesNotThrowAnyException();
        assertThat(delegate.calls).containsExactly("workerStarted", "batchCompleted", "processed", "handlerFailed",
                "deadLettered", "loopFailed");
        assertThat(guarded.failures()).isEqualTo(7);
    }

    @Test
    void the_default_listener_ignores_everything() {
        InboxListener none = InboxListener.none();
        assertThatCode(() -> {
            none.processed("OrderCreated", 1, 1);
            none.loopFailed(new RuntimeException());
        }).doesNotThrowAnyException();
        assertThat(InboxListener.none()).isSameAs(none);
    }
}
