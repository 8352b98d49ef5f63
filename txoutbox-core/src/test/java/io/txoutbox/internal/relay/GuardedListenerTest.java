package io.txoutbox.internal.relay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;

import io.txoutbox.OutboxSchema;
import io.txoutbox.RelayConfig;
import io.txoutbox.spi.RelayListener;
import io.txoutbox.spi.SendResult;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class GuardedListenerTest {

    private static final class Throwing implements RelayListener {
        final List<String> calls = new ArrayList<>();

        private void fail(String what) {
            calls.add(what);
            throw new IllegalStateException("listener bug in " + what);
        }

        @Override
        public void relayStarted(RelayConfig config) {
            fail("relayStarted");
        }

        @Override
        public void batchCompleted(int size, long claimNanos, long sendNanos, long markNanos) {
            fail("batchCompleted");
        }

        @Override
        public void published(String topic, long commitToAckNanos) {
            fail("published");
        }

        @Override
        public void sendFailed(String topic, SendResult.Kind kind) {
            fail("sendFailed");
        }

        @Override
        public void keyParked(String topic) {
            throw new StackOverflowError("not even an Exception");
        }

        @Override
        public void deadLettered(String topic) {
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
        GuardedListener guarded = new GuardedListener(delegate, "relay");
        assertThatCode(() -> {
            guarded.relayStarted(new RelayConfig(OutboxSchema.defaults(), "relay", 1, 1, 1,
                    RelayConfig.DEFAULT_POLL_INTERVAL, RelayConfig.DEFAULT_LINGER, RelayConfig.DEFAULT_SEND_TIMEOUT,
                    RelayConfig.DEFAULT_STATEMENT_TIMEOUT, RelayConfig.DEFAULT_LOCK_TIMEOUT,
                    RelayConfig.DEFAULT_TRANSACTION_TIMEOUT, RelayConfig.DEFAULT_OUTAGE_BACKOFF_MAX,
                    RelayConfig.DEFAULT_LEASE_TIMEOUT, 1, io.txoutbox.RetryPolicy.defaults(),
                    RelayConfig.DEFAULT_FAILURE_POLICY, null, false, false));
            guarded.batchCompleted(1, 1, 1, 1);
            guarded.published("orders", 1);
            guarded.sendFailed("orders", SendResult.Kind.PERMANENT);
            guarded.keyParked("orders");
            guarded.deadLettered("orders");
            guarded.loopFailed(new RuntimeException("db"));
        }).doesNotThrowAnyException();
        assertThat(delegate.calls).containsExactly("relayStarted", "batchCompleted", "published", "sendFailed",
                "deadLettered", "loopFailed");
        assertThat(guarded.failures()).isEqualTo(7);
    }

    @Test
    void the_default_listener_ignores_everything() {
        RelayListener none = RelayListener.none();
        assertThatCode(() -> {
            none.published("orders", 1);
            none.loopFailed(new RuntimeException());
        }).doesNotThrowAnyException();
        assertThat(RelayListener.none()).isSameAs(none);
    }
}
