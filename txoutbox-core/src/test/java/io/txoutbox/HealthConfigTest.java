package io.txoutbox;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.postgresql.ds.PGSimpleDataSource;

class HealthConfigTest {

    private OutboxHealth.Builder builder() {
        return OutboxHealth.builder().dataSource(new PGSimpleDataSource());
    }

    private static HealthConfig config(OutboxHealth.Builder b) {
        return b.build().config();
    }

    @Test
    void every_descriptor_default_is_the_builders_default() {
        ConfigDescriptorChecks.defaultsMatch(HealthConfig.DESCRIPTOR, config(builder()));
    }

    @Test
    void settings_by_name_set_the_builder() {
        ConfigDescriptorChecks.textSets(HealthConfig.DESCRIPTOR, this::builder, HealthConfigTest::config,
                Map.of("max-event-age", "1m", "max-loop-stall", "PT90S"),
                Map.of("max-event-age", Duration.ofMinutes(1), "max-loop-stall", Duration.ofSeconds(90)));
    }

    @Test
    void a_bad_setting_names_it_and_changes_nothing() {
        ConfigDescriptorChecks.badSettingsChangeNothing(HealthConfig.DESCRIPTOR, this::builder,
                HealthConfigTest::config, "max-event-age", "1m", "max-loop-stall", "long");
    }

    @Test
    void a_bad_value_from_the_builder_names_the_property() {
        assertThatThrownBy(() -> builder().maxEventAge(Duration.ZERO).build())
                .isInstanceOf(InvalidConfigurationException.class)
                .hasMessage("health.maxEventAge must be > 0, was 0ms (setting txoutbox.health.max-event-age)");
    }
}
