package io.txoutbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** {@link RetryPolicy}'s rules, through the one validator: the values accepted and refused, and the messages. */
class RetryPolicyConfigTest {

    private static RetryPolicy policy(int attempts, String initial, String max, double multiplier, double jitter) {
        return new RetryPolicy(attempts, Duration.parse(initial), Duration.parse(max), multiplier, jitter);
    }

    @ParameterizedTest
    @CsvSource({"1, PT0.001S, PT0.001S, 1.0, 0.0", "10, PT1S, PT5M, 2.0, 0.2", "1000, PT1S, PT1S, 100.0, 0.999"})
    void accepts_the_edges(int attempts, String initial, String max, double multiplier, double jitter) {
        assertThat(policy(attempts, initial, max, multiplier, jitter).maxAttempts()).isEqualTo(attempts);
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
            "0|PT1S|PT1S|2.0|0.2|retry.maxAttempts must be >= 1, was 0 (setting txoutbox.retry.max-attempts)",
            "1|PT0S|PT1S|2.0|0.2|retry.initialBackoff must be > 0, was 0ms (setting txoutbox.retry.initial-backoff)",
            "1|-PT1S|PT1S|2.0|0.2|retry.initialBackoff must be > 0, was -1s (setting txoutbox.retry.initial-backoff)",
            "1|PT2S|PT1S|2.0|0.2|retry.maxBackoff must be >= retry.initialBackoff (2s), was 1s (setting "
                    + "txoutbox.retry.max-backoff)",
            "1|PT1S|PT1S|0.99|0.2|retry.multiplier must be >= 1.0, was 0.99 (setting txoutbox.retry.multiplier)",
            "1|PT1S|PT1S|NaN|0.2|retry.multiplier must be >= 1.0, was NaN (setting txoutbox.retry.multiplier)",
            "1|PT1S|PT1S|Infinity|0.2|retry.multiplier must be >= 1.0, was Infinity (setting "
                    + "txoutbox.retry.multiplier)",
            "1|PT1S|PT1S|2.0|1.0|retry.jitter must be in [0, 1), was 1.0 (setting txoutbox.retry.jitter)",
            "1|PT1S|PT1S|2.0|-0.1|retry.jitter must be in [0, 1), was -0.1 (setting txoutbox.retry.jitter)",
            "1|PT1S|PT1S|2.0|NaN|retry.jitter must be in [0, 1), was NaN (setting txoutbox.retry.jitter)"})
    void refuses_out_of_range_values_naming_them(int attempts, String initial, String max, double multiplier,
            double jitter, String message) {
        assertThatThrownBy(() -> policy(attempts, initial, max, multiplier, jitter))
                .isInstanceOf(InvalidConfigurationException.class).hasMessage(message);
    }

    @Test
    void refuses_missing_backoffs() {
        assertThatThrownBy(() -> new RetryPolicy(1, null, Duration.ofSeconds(1), 2.0, 0.2))
                .isInstanceOf(InvalidConfigurationException.class).hasMessageContaining("retry.initialBackoff");
        assertThatThrownBy(() -> new RetryPolicy(1, Duration.ofSeconds(1), null, 2.0, 0.2))
                .isInstanceOf(InvalidConfigurationException.class).hasMessageContaining("retry.maxBackoff");
    }

    @Test
    void a_components_retry_settings_are_named_after_the_component() {
        assertThatThrownBy(() -> PollingRelay.builder().dataSource(new org.postgresql.ds.PGSimpleDataSource())
                .transport((io.txoutbox.spi.Transport) (lane, batch) -> null)
                .settings(Map.of("retry.jitter", "1.5")).build())
                .isInstanceOf(InvalidConfigurationException.class)
                .hasMessage("relay.retry.jitter must be in [0, 1), was 1.5 (setting txoutbox.relay.retry.jitter)");
        assertThatThrownBy(() -> InboxWorker.builder().dataSource(new org.postgresql.ds.PGSimpleDataSource())
                .consumer("billing").handler("T", (c, e) -> { })
                .settings(Map.of("retry.max-attempts", "0")).build())
                .isInstanceOf(InvalidConfigurationException.class)
                .hasMessageContaining("inboxWorker.retry.maxAttempts must be >= 1, was 0 "
                        + "(setting txoutbox.inbox-worker.retry.max-attempts)");
        assertThatThrownBy(() -> PollingRelay.builder().retry(null))
                .isInstanceOf(InvalidConfigurationException.class)
                .hasMessage("relay.retry must not be null (setting txoutbox.relay.retry)");
    }
}
