package io.txoutbox.internal.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.txoutbox.InvalidConfigurationException;
import io.txoutbox.OutboxSchema;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** The one validator: its bounds, and messages that name the property, the value and the setting. */
class ChecksTest {

    @Test
    void messages_name_the_property_the_value_and_the_setting() {
        assertThatThrownBy(() -> Checks.between("relay.batchSize", 0, 1, 10_000))
                .isInstanceOf(InvalidConfigurationException.class)
                .hasMessage("relay.batchSize must be between 1 and 10000, was 0 (setting txoutbox.relay.batch-size)");
        assertThat(Checks.settingName("inboxWorker.retry.maxAttempts"))
                .isEqualTo("txoutbox.inbox-worker.retry.max-attempts");
        assertThatThrownBy(() -> Checks.notNull("relay.failurePolicy", null))
                .hasMessage("relay.failurePolicy must not be null (setting txoutbox.relay.failure-policy)");
    }

    @Test
    void numeric_bounds_are_inclusive() {
        assertThat(Checks.between("x.n", 1, 1, 3)).isEqualTo(1);
        assertThat(Checks.between("x.n", 3L, 1L, 3L)).isEqualTo(3L);
        assertThatThrownBy(() -> Checks.between("x.n", 4L, 1L, 3L)).hasMessageContaining("was 4");
        assertThat(Checks.atLeast("x.n", 0L, 0L)).isZero();
        assertThatThrownBy(() -> Checks.atLeast("x.n", -1L, 0L)).hasMessage("x.n must be >= 0, was -1 (setting "
                + "txoutbox.x.n)");
        assertThat(Checks.atLeast("x.f", 1.0, 1.0)).isEqualTo(1.0);
        assertThatThrownBy(() -> Checks.atLeast("x.f", Double.NaN, 1.0)).hasMessageContaining("was NaN");
        assertThatThrownBy(() -> Checks.atLeast("x.f", Double.POSITIVE_INFINITY, 1.0))
                .hasMessageContaining("was Infinity");
        assertThat(Checks.fraction("x.j", 0.0)).isZero();
        assertThatThrownBy(() -> Checks.fraction("x.j", 1.0)).hasMessageContaining("must be in [0, 1), was 1.0");
    }

    @Test
    void durations() {
        assertThat(Checks.positive("x.d", Duration.ofNanos(1))).isEqualTo(Duration.ofNanos(1));
        assertThatThrownBy(() -> Checks.positive("x.d", Duration.ZERO)).hasMessage("x.d must be > 0, was 0ms "
                + "(setting txoutbox.x.d)");
        assertThatThrownBy(() -> Checks.positive("x.d", null)).hasMessageContaining("was null");
        assertThat(Checks.notNegative("x.d", Duration.ZERO)).isZero();
        assertThatThrownBy(() -> Checks.notNegative("x.d", Duration.ofSeconds(-1))).hasMessageContaining("was -1s");
        assertThat(Checks.atLeast("x.d", Duration.ofSeconds(1), Duration.ofSeconds(1))).hasSeconds(1);
        assertThatThrownBy(() -> Checks.atLeast("x.d", Duration.ofMillis(999), Duration.ofSeconds(1)))
                .hasMessage("x.d must be >= 1s, was 999ms (setting txoutbox.x.d)");
    }

    @Test
    void the_retry_rules_name_the_components_settings() {
        Checks.retry("relay.retry", 1, Duration.ofMillis(1), Duration.ofMillis(1), 1.0, 0.0);
        assertThatThrownBy(() -> Checks.retry("relay.retry", 1, Duration.ofSeconds(2), Duration.ofSeconds(1), 2, 0))
                .hasMessage("relay.retry.maxBackoff must be >= relay.retry.initialBackoff (2s), was 1s (setting "
                        + "txoutbox.relay.retry.max-backoff)");
        assertThatThrownBy(() -> Checks.retry("relay.retry", 1, Duration.ofSeconds(1), null, 2, 0))
                .hasMessageContaining("relay.retry.maxBackoff").hasMessageContaining("was null");
    }

    @ParameterizedTest
    @ValueSource(strings = {"relay", "relay-1", "a.b_c", "X"})
    void names_that_pass(String name) {
        assertThat(Checks.name("relay.name", name)).isEqualTo(name);
    }

    @ParameterizedTest
    @ValueSource(strings = {"", "a b", "ü", "x/y"})
    void names_that_fail_quote_the_value(String name) {
        assertThatThrownBy(() -> Checks.name("relay.name", name))
                .hasMessage("relay.name must be 1 to 100 characters from [A-Za-z0-9._-], was '" + name
                        + "' (setting txoutbox.relay.name)");
    }

    @Test
    void topics_consumers_identifiers_and_the_schema() {
        assertThat(Checks.topic("relay.deadLetterTopic", "orders.dlt")).isEqualTo("orders.dlt");
        assertThatThrownBy(() -> Checks.topic("relay.deadLetterTopic", ".")).hasMessageContaining("other than");
        assertThatThrownBy(() -> Checks.topic("relay.deadLetterTopic", "x".repeat(250)))
                .hasMessageContaining("1 to 249 characters");
        assertThat(Checks.consumer("inboxWorker.consumer", "billing")).isEqualTo("billing");
        assertThatThrownBy(() -> Checks.consumer("inboxWorker.consumer", "a\nb"))
                .hasMessageContaining("without control characters");
        assertThatThrownBy(() -> Checks.consumerArgument("consumer", null)).hasMessage("consumer must be 1 to 200 "
                + "characters without control characters, was null");
        assertThat(Checks.identifier("schema.schema", "orders")).isEqualTo("orders");
        assertThatThrownBy(() -> Checks.identifier("schema.schema", "Orders"))
                .hasMessageContaining("schema.schema must match ^[a-z_][a-z0-9_]{0,62}$")
                .hasMessageEndingWith("(setting txoutbox.schema.schema)");
        assertThatThrownBy(() -> Checks.roomForSuffix("schema.outboxTable", "t".repeat(50), "_schema_history"))
                .hasMessageContaining("derived names");
        assertThat(Checks.schema("relay", OutboxSchema.defaults())).isEqualTo(OutboxSchema.defaults());
        assertThatThrownBy(() -> Checks.schema("relay", null)).hasMessageContaining("OutboxSchema.defaults()");
    }
}
