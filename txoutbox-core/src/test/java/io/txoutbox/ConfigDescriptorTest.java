package io.txoutbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.txoutbox.spi.Transport;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;

class ConfigDescriptorTest {

    private static final ConfigDescriptor<PollingRelay.Builder, RelayConfig> D = RelayConfig.DESCRIPTOR;

    @Test
    void every_setting_has_a_kebab_case_name_a_property_an_environment_variable_and_a_doc() {
        assertThat(D.prefix()).isEqualTo("txoutbox.relay");
        for (ConfigDescriptor.Setting s : D.settings()) {
            assertThat(s.name()).as(s.name()).matches("[a-z0-9.-]+");
            assertThat(s.property()).isEqualTo("txoutbox.relay." + s.name());
            assertThat(s.environmentVariable()).matches("TXOUTBOX_RELAY_[A-Z0-9_]+");
            assertThat(s.doc()).as(s.name()).isNotBlank();
        }
        assertThat(D.setting("batch-size")).get().extracting(ConfigDescriptor.Setting::environmentVariable)
                .isEqualTo("TXOUTBOX_RELAY_BATCH_SIZE");
        assertThat(D.setting("retry.max-attempts")).isPresent();
    }

    @Test
    void every_default_reads_back_from_its_own_text_and_equals_the_builders_default() {
        Map<String, Object> defaults = D.values(config(Map.of()));
        Map<String, Object> fromText = new LinkedHashMap<>();
        for (ConfigDescriptor.Setting s : D.settings()) {
            assertThat(defaults.get(s.name())).as(s.name()).isEqualTo(s.defaultValue());
            if (s.defaultValue() != null) {
                fromText.put(s.name(), s.defaultText());
            }
        }
        assertThat(D.values(config(fromText))).isEqualTo(defaults);
    }

    @Test
    void text_values_by_name_or_full_property_are_parsed_and_applied() {
        RelayConfig c = config(Map.of("batch-size", "500", "txoutbox.relay.poll-interval", "250ms",
                "max-batch-bytes", "4MB", "failure-policy", "dead-letter-and-continue", "dead-letter-topic", "dlq",
                "retry.max-backoff", "2m", "retry.initial-backoff", "PT90S", "listen-notify", "true"));
        assertThat(c.batchSize()).isEqualTo(500);
        assertThat(c.pollInterval()).isEqualTo(Duration.ofMillis(250));
        assertThat(c.maxBatchBytes()).isEqualTo(4L * 1024 * 1024);
        assertThat(c.failurePolicy()).isEqualTo(FailurePolicy.DEAD_LETTER_AND_CONTINUE);
        assertThat(c.retry().initialBackoff()).isEqualTo(Duration.ofSeconds(90));
        assertThat(c.retry().maxBackoff()).isEqualTo(Duration.ofMinutes(2));
        assertThat(c.listenNotify()).isTrue();
        assertThat(config(Map.of("batch-size", 42)).batchSize()).as("a typed value").isEqualTo(42);
    }

    @Test
    void an_unknown_name_an_unreadable_value_or_a_setting_given_twice_fails_and_changes_nothing() {
        PollingRelay.Builder b = builder();
        Map<String, Object> bad = new LinkedHashMap<>();
        bad.put("batch-size", "500");
        bad.put("batch-sise", "1");
        assertThatThrownBy(() -> b.settings(bad)).isInstanceOf(InvalidConfigurationException.class)
                .hasMessageContaining("batch-sise is not a setting of relay (txoutbox.relay)")
                .hasMessageContaining("batch-size");
        Map<String, Object> unreadable = new LinkedHashMap<>();
        unreadable.put("batch-size", "500");
        unreadable.put("poll-interval", "soon");
        assertThatThrownBy(() -> b.settings(unreadable)).isInstanceOf(InvalidConfigurationException.class)
                .hasMessageContaining("txoutbox.relay.poll-interval: 'soon' is not valid")
                .hasMessageContaining("the default is 500ms");
        assertThatThrownBy(() -> b.settings(Map.of("lanes", "2", "txoutbox.relay.lanes", "3")))
                .hasMessageContaining("txoutbox.relay.lanes is given twice");
        assertThat(b.settings(Map.of()).build().config().batchSize()).as("nothing of the failed calls applied")
                .isEqualTo(RelayConfig.DEFAULT_BATCH_SIZE);
    }

    @Test
    void a_value_out_of_range_names_the_builder_property_the_value_and_the_setting() {
        assertThatThrownBy(() -> config(Map.of("batch-size", "0")))
                .hasMessage("relay.batchSize must be between 1 and 10000, was 0 (setting txoutbox.relay.batch-size)");
        assertThatThrownBy(() -> config(Map.of("failure-policy", "DEAD_LETTER_AND_CONTINUE", "dead-letter-topic",
                ".."))).hasMessageContaining("'..' is not a valid Kafka topic name");
    }

    @Test
    void describe_lists_every_setting_in_its_text_form() {
        String d = D.describe(config(Map.of("poll-interval", "2s")));
        assertThat(d).startsWith("name=relay, lanes=4, batch-size=2000, max-batch-bytes=16MB, poll-interval=2s")
                .contains("dead-letter-topic=unset").contains("retry.max-attempts=10");
    }

    private static RelayConfig config(Map<String, ?> settings) {
        return builder().settings(settings).build().config();
    }

    private static PollingRelay.Builder builder() {
        DataSource ds = (DataSource) java.lang.reflect.Proxy.newProxyInstance(DataSource.class.getClassLoader(),
                new Class<?>[] {DataSource.class}, (p, m, a) -> {
                    throw new UnsupportedOperationException("not used: the relay is never started");
                });
        Transport never = (lane, batch) -> {
            throw new UnsupportedOperationException("not used: the relay is never started");
        };
        return PollingRelay.builder().dataSource(ds).transport(never);
    }
}
