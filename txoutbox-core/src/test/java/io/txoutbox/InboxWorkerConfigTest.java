package io.txoutbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.txoutbox.internal.inbox.HandlerFailures;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Map;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.postgresql.ds.PGSimpleDataSource;

class InboxWorkerConfigTest {

    private static final DataSource DS = new PGSimpleDataSource();

    private static InboxWorker.Builder valid() {
        return InboxWorker.builder().dataSource(DS).consumer("billing").handler("T", (c, e) -> { });
    }

    @Test
    void bad_values_are_refused_naming_the_property() {
        assertThatThrownBy(() -> valid().lanes(0).build()).hasMessageContaining("inboxWorker.lanes")
                .hasMessageContaining("was 0");
        assertThatThrownBy(() -> valid().lanes(65).build()).hasMessageContaining("inboxWorker.lanes");
        assertThatThrownBy(() -> valid().batchSize(0).build()).hasMessageContaining("inboxWorker.batchSize");
        assertThatThrownBy(() -> valid().consumer(null).build()).hasMessageContaining("inboxWorker.consumer");
        assertThatThrownBy(() -> valid().consumer("a\nb").build()).hasMessageContaining("inboxWorker.consumer");
        assertThatThrownBy(() -> valid().dataSource(null).build()).hasMessageContaining("inboxWorker.dataSource");
        assertThatThrownBy(() -> InboxWorker.builder().dataSource(DS).consumer("c").build())
                .hasMessageContaining("at least one handler");
        assertThatThrownBy(() -> valid().name("a b").build()).hasMessageContaining("inboxWorker.name");
        assertThat(valid().build().config().lanes()).isEqualTo(InboxWorkerConfig.DEFAULT_LANES);
    }

    @Test
    void the_lease_and_the_handler_budget_are_validated_against_each_other() {
        InboxWorkerConfig defaults = valid().build().config();
        assertThat(defaults.leaseTimeout()).isEqualTo(RelayConfig.DEFAULT_LEASE_TIMEOUT)
                .isEqualTo(Duration.ofSeconds(10));
        assertThat(defaults.handlerTimeout()).isEqualTo(Duration.ofSeconds(5));
        assertThatThrownBy(() -> valid().leaseTimeout(Duration.ofMillis(999)).build())
                .hasMessageContaining("inboxWorker.leaseTimeout must be >= 1 s");
        assertThatThrownBy(() -> valid().leaseTimeout(null).build())
                .hasMessageContaining("inboxWorker.leaseTimeout");
        assertThatThrownBy(() -> valid().handlerTimeout(Duration.ZERO).build())
                .hasMessageContaining("inboxWorker.handlerTimeout must be > 0");
        // a handler idles in its batch's transaction for up to its budget: the lease must leave room to give up
        assertThatThrownBy(() -> valid().handlerTimeout(Duration.ofSeconds(30)).build())
                .isInstanceOf(InvalidConfigurationException.class)
                .hasMessageContaining("inboxWorker.handlerTimeout (PT30S) must be at most half of"
                        + " inboxWorker.leaseTimeout (PT10S)")
                .hasMessageContaining("raise leaseTimeout");
        assertThatThrownBy(() -> valid().leaseTimeout(Duration.ofSeconds(8)).build())
                .hasMessageContaining("inboxWorker.handlerTimeout (PT5S)");
        InboxWorkerConfig slow = valid().handlerTimeout(Duration.ofSeconds(30)).leaseTimeout(Duration.ofMinutes(1))
                .build().config();
        assertThat(slow.handlerTimeout()).isEqualTo(Duration.ofSeconds(30));
        assertThat(slow.toString()).contains("leaseTimeout=PT1M", "handlerTimeout=PT30S");
    }

    @Test
    void every_descriptor_default_is_the_builders_default() {
        InboxWorkerConfig defaults = valid().build().config();
        Map<String, Object> values = InboxWorkerConfig.DESCRIPTOR.values(defaults);
        for (ConfigDescriptor.Setting s : InboxWorkerConfig.DESCRIPTOR.settings()) {
            assertThat(s.property()).startsWith("txoutbox.inbox-worker.");
            if (s.defaultValue() != null) { // consumer is required: no default
                assertThat(values.get(s.name())).as(s.property()).isEqualTo(s.defaultValue());
            }
        }
        assertThat(InboxWorkerConfig.DESCRIPTOR.setting("consumer")).isPresent();
        assertThat(InboxWorkerConfig.DESCRIPTOR.setting("handler-timeout").orElseThrow().environmentVariable())
                .isEqualTo("TXOUTBOX_INBOX_WORKER_HANDLER_TIMEOUT");
        assertThat(InboxWorkerConfig.DESCRIPTOR.describe(defaults)).contains("consumer=billing", "lanes=2",
                "poll-interval=500ms", "handler-timeout=5s", "retry.max-attempts=");
    }

    @Test
    void settings_by_name_and_text_set_the_values() {
        InboxWorkerConfig c = valid().settings(Map.of("consumer", "shipping", "txoutbox.inbox-worker.name", "w1",
                "lanes", "4", "batch-size", "250", "poll-interval", "250ms", "retry.max-attempts", "7",
                "retry.initial-backoff", "2s", "failure-policy", "DEAD_LETTER_AND_CONTINUE",
                "log-partition-keys", "true", "lease-timeout", "PT1M")).settings(Map.of("handler-timeout", "30s"))
                .build().config();
        assertThat(c.consumer()).isEqualTo("shipping");
        assertThat(c.name()).isEqualTo("w1");
        assertThat(c.lanes()).isEqualTo(4);
        assertThat(c.batchSize()).isEqualTo(250);
        assertThat(c.pollInterval()).isEqualTo(Duration.ofMillis(250));
        assertThat(c.retry().maxAttempts()).isEqualTo(7);
        assertThat(c.retry().initialBackoff()).isEqualTo(Duration.ofSeconds(2));
        assertThat(c.failurePolicy()).isEqualTo(FailurePolicy.DEAD_LETTER_AND_CONTINUE);
        assertThat(c.logPartitionKeys()).isTrue();
        assertThat(c.leaseTimeout()).isEqualTo(Duration.ofMinutes(1));
        assertThat(c.handlerTimeout()).isEqualTo(Duration.ofSeconds(30));
    }

    @Test
    void an_unknown_name_or_a_bad_value_fails_naming_the_setting_and_changes_nothing() {
        for (Map<String, String> bad : java.util.List.of(Map.of("lanes", "3", "handler", "x"),
                Map.of("lanes", "3", "batch-size", "many"), Map.of("lanes", "3", "poll-interval", "soon"),
                Map.of("lanes", "3", "failure-policy", "NEVER"))) {
            InboxWorker.Builder b = valid();
            String name = bad.keySet().stream().filter(k -> !k.equals("lanes")).findFirst().orElseThrow();
            assertThatThrownBy(() -> b.settings(bad)).isInstanceOf(InvalidConfigurationException.class)
                    .hasMessageContaining(name.equals("handler") ? "handler" : "txoutbox.inbox-worker." + name);
            assertThat(InboxWorkerConfig.DESCRIPTOR.values(b.build().config())) // lanes stayed 2
                    .isEqualTo(InboxWorkerConfig.DESCRIPTOR.values(valid().build().config()));
        }
    }

    @Test
    void a_bad_value_from_the_builder_names_the_property_and_the_setting() {
        assertThatThrownBy(() -> valid().batchSize(0).build())
                .hasMessageContaining("inboxWorker.batchSize must be between 1 and 5000, was 0")
                .hasMessageContaining("(setting txoutbox.inbox-worker.batch-size)");
        assertThatThrownBy(() -> valid().settings(Map.of("lanes", "65")).build())
                .hasMessageContaining("inboxWorker.lanes").hasMessageContaining("txoutbox.inbox-worker.lanes");
        assertThatThrownBy(() -> valid().consumer("").build())
                .hasMessageContaining("inboxWorker.consumer must be 1 to 200 characters")
                .hasMessageContaining("(setting txoutbox.inbox-worker.consumer)");
        // the retry values are checked together at build, in whatever order they came
        assertThat(valid().settings(Map.of("retry.initial-backoff", "2m", "retry.max-backoff", "5m")).build()
                .config().retry().maxBackoff()).isEqualTo(Duration.ofMinutes(5));
        assertThatThrownBy(() -> valid().settings(Map.of("retry.multiplier", "0.5")).build())
                .hasMessageContaining("multiplier");
    }

    @Test
    void the_default_classifier_splits_permanent_from_transient_failures() {
        assertThat(HandlerFailures.isPermanent(new OutboxException("bad format"))).isTrue();
        assertThat(HandlerFailures.isPermanent(new OutboxException("lost", null, true))).isFalse();
        assertThat(HandlerFailures.isPermanent(new SQLException("unique", "23505"))).isTrue();
        assertThat(HandlerFailures.isPermanent(new SQLException("serialization", "40001"))).isFalse();
        assertThat(HandlerFailures.isPermanent(new OutboxException("wrapped", new SQLException("x", "40P01"))))
                .isFalse();
        assertThat(HandlerFailures.isPermanent(new IllegalStateException("anything else"))).isFalse();
    }
}
