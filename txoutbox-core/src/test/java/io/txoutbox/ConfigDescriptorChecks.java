package io.txoutbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.Map;
import java.util.function.Function;
import java.util.function.Supplier;

/** The checks every {@code *ConfigTest} runs on its component's {@link ConfigDescriptor}. */
final class ConfigDescriptorChecks {

    private ConfigDescriptorChecks() {
    }

    /** (1) Every setting's documented default is the value a builder with no settings builds ({@code required}: none). */
    static <B, C> void defaultsMatch(ConfigDescriptor<B, C> descriptor, C defaults, String... required) {
        Map<String, Object> values = descriptor.values(defaults);
        java.util.Set<String> skipped = java.util.Set.of(required);
        for (ConfigDescriptor.Setting s : descriptor.settings()) {
            if (skipped.contains(s.name())) {
                assertThat(s.defaultValue()).as(s.property() + " is required: no default").isNull();
                continue;
            }
            assertThat(values.get(s.name())).as(s.property()).isEqualTo(s.defaultValue());
        }
    }

    /** (2) Text values set the settings, by short and by full name. */
    static <B, C> void textSets(ConfigDescriptor<B, C> descriptor, Supplier<B> builder, Function<B, C> build,
            Map<String, String> text, Map<String, Object> expected) {
        C config = build.apply(descriptor.apply(builder.get(), text));
        Map<String, Object> values = descriptor.values(config);
        expected.forEach((name, value) -> assertThat(values.get(name)).as(name).isEqualTo(value));
        Map<String, String> full = new java.util.LinkedHashMap<>();
        text.forEach((k, v) -> full.put(descriptor.prefix() + "." + k, v));
        assertThat(descriptor.values(build.apply(descriptor.apply(builder.get(), full)))).isEqualTo(values);
    }

    /** (3) An unknown name and an unreadable value fail naming the setting, and change nothing. */
    static <B, C> void badSettingsChangeNothing(ConfigDescriptor<B, C> descriptor, Supplier<B> builder,
            Function<B, C> build, String goodName, String goodValue, String badName, String badValue) {
        B b = builder.get();
        C before = build.apply(b);
        assertThatThrownBy(() -> descriptor.apply(b, Map.of(goodName, goodValue, "no-such-setting", "1")))
                .isInstanceOf(InvalidConfigurationException.class).hasMessageContaining("no-such-setting")
                .hasMessageContaining(descriptor.prefix());
        assertThatThrownBy(() -> descriptor.apply(b, Map.of(goodName, goodValue, badName, badValue)))
                .isInstanceOf(InvalidConfigurationException.class)
                .hasMessageContaining(descriptor.prefix() + "." + badName);
        assertThat(descriptor.values(build.apply(b))).isEqualTo(descriptor.values(before));
    }
}
