package io.txoutbox.spring;

import static org.assertj.core.api.Assertions.assertThat;

import io.txoutbox.ConfigDescriptor;
import io.txoutbox.InboxWorkerConfig;
import io.txoutbox.ReplayConfig;
import io.txoutbox.RetentionConfig;
import io.txoutbox.kafka.KafkaInboxConsumerConfig;
import io.txoutbox.spring.ConfigurationMetadataTest.Source;
import io.txoutbox.spring.internal.StarterSettings;
import io.txoutbox.spring.internal.TxoutboxSettings;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.springframework.core.env.AbstractEnvironment;
import org.springframework.core.env.MapPropertySource;
import org.springframework.core.env.PropertySource;
import org.springframework.core.env.StandardEnvironment;
import org.springframework.core.env.SystemEnvironmentPropertySource;
import tools.jackson.databind.JsonNode;

/**
 * Every property in the starter's configuration metadata is read by the starter under exactly that name — set in an
 * {@code application.properties}-like source, and as its environment variable ({@code TXOUTBOX_RELAY_BATCH_SIZE})
 * through Spring's relaxed binding — and nothing else picks it up. Each property is set alone in an otherwise empty
 * environment, so a name that binds to the wrong setting shows.
 */
class ConfigurationPropertyBindingTest {

    /** The descriptors the starter does not apply (yet): not in the metadata, but their names bind the same way. */
    private static final List<ConfigDescriptor<?, ?>> NOT_APPLIED = List.of(InboxWorkerConfig.DESCRIPTOR,
            RetentionConfig.DESCRIPTOR, ReplayConfig.DESCRIPTOR, KafkaInboxConsumerConfig.DESCRIPTOR);

    @Test
    void everyPropertyOfTheMetadataBindsUnderItsNameAndAsItsEnvironmentVariable() throws IOException {
        List<String> names = new ArrayList<>();
        for (JsonNode p : ConfigurationMetadataTest.committed().get("properties")) {
            names.add(p.get("name").asString());
        }
        List<String> expected = new ArrayList<>();
        StarterSettings.ALL.forEach(s -> expected.add(s.property()));
        ConfigurationMetadataTest.SOURCES.forEach(
                source -> source.descriptor().settings().forEach(s -> expected.add(s.property())));
        assertThat(names).as("the metadata's properties (%s)", ConfigurationMetadataTest.REGENERATE)
                .containsExactlyElementsOf(expected);

        List<String> failures = new ArrayList<>();
        for (String name : names) {
            StarterSettings.Setting starter = StarterSettings.ALL.stream().filter(s -> s.property().equals(name))
                    .findFirst().orElse(null);
            String value = starter != null ? sample(starter) : sample(setting(name));
            String variable = name.replace('.', '_').replace('-', '_').toUpperCase(Locale.ROOT);
            check(name, value, new MapPropertySource("application.properties", Map.of(name, value)), failures);
            check(name, value, environment(variable, value), failures);
        }
        assertThat(failures).as("properties of the metadata that the starter does not read as named").isEmpty();
    }

    /**
     * Core's descriptors the starter does not apply yet bind the same way when it does; each one's documented
     * environment variable ({@link ConfigDescriptor.Setting#environmentVariable()}) included.
     */
    @Test
    void everyDescriptorsEnvironmentVariableBindsToItsSetting() {
        List<ConfigDescriptor<?, ?>> all = new ArrayList<>();
        ConfigurationMetadataTest.SOURCES.forEach(s -> all.add(s.descriptor()));
        all.addAll(NOT_APPLIED);
        List<String> failures = new ArrayList<>();
        for (ConfigDescriptor<?, ?> d : all) {
            for (ConfigDescriptor.Setting s : d.settings()) {
                String value = sample(s);
                TxoutboxSettings settings = settings(environment(s.environmentVariable(), value));
                for (ConfigDescriptor<?, ?> other : all) {
                    Map<String, Object> bound = settings.values(other);
                    Map<String, Object> want = other == d ? Map.of(s.name(), value) : Map.of();
                    if (!bound.equals(want)) {
                        failures.add(s.environmentVariable() + " for " + s.property() + ": " + other.prefix()
                                + " bound " + bound + ", expected " + want);
                    }
                }
            }
        }
        assertThat(failures).as("environment variables that do not bind to their setting").isEmpty();
    }

    /**
     * The metadata covers exactly the descriptors the auto-configuration applies: a component added to the
     * auto-configuration without its settings in the metadata, or settings listed for a component it does not make,
     * fail here.
     */
    @Test
    void theMetadataHasExactlyTheDescriptorsTheAutoConfigurationApplies() throws IOException {
        Path sources = Path.of(System.getProperty("basedir", System.getProperty("user.dir"))).toAbsolutePath()
                .resolve("src/main/java");
        Pattern reference = Pattern.compile("\\b([A-Z]\\w*)\\.DESCRIPTOR\\b");
        Set<String> applied = new TreeSet<>();
        try (Stream<Path> files = Files.walk(sources)) {
            for (Path file : files.filter(f -> f.toString().endsWith(".java")).toList()) {
                Matcher m = reference.matcher(Files.readString(file));
                while (m.find()) {
                    applied.add(m.group(1));
                }
            }
        }
        Set<String> listed = ConfigurationMetadataTest.SOURCES.stream().map(s -> s.type().getSimpleName())
                .collect(Collectors.toCollection(TreeSet::new));
        assertThat(listed).as("ConfigurationMetadataTest.SOURCES against the descriptors %s applies", sources)
                .isEqualTo(applied);
    }

    /** Sets {@code value} alone in {@code source}; expects exactly the setting {@code name} to read it. */
    private static void check(String name, String value, PropertySource<?> source, List<String> failures) {
        String where = source instanceof SystemEnvironmentPropertySource env
                ? env.getPropertyNames()[0] + " (environment)" : name;
        TxoutboxSettings settings = settings(source);
        for (StarterSettings.Setting s : StarterSettings.ALL) {
            String want = s.property().equals(name) ? value : s.defaultText();
            String bound = settings.text(s);
            if (!bound.equals(want)) {
                failures.add(where + ": " + s.property() + " read '" + bound + "', expected '" + want + "'");
            }
            s.read(settings);
        }
        for (Source<?> component : ConfigurationMetadataTest.SOURCES) {
            ConfigDescriptor<?, ?> d = component.descriptor();
            Map<String, Object> want = d.setting(name).map(s -> Map.<String, Object>of(s.name(), value))
                    .orElse(Map.of());
            Map<String, Object> bound = settings.values(d);
            if (!bound.equals(want)) {
                failures.add(where + ": " + d.prefix() + " bound " + bound + ", expected " + want);
            }
            apply(settings, component);      // the value is one core accepts, through the starter's own call
        }
    }

    private static <B> B apply(TxoutboxSettings settings, Source<B> source) {
        return settings.apply(source.descriptor(), source.builder().get());
    }

    private static ConfigDescriptor.Setting setting(String name) {
        for (Source<?> source : ConfigurationMetadataTest.SOURCES) {
            if (name.startsWith(source.descriptor().prefix() + ".")) {
                var s = source.descriptor().setting(name);
                if (s.isPresent()) {
                    return s.get();
                }
            }
        }
        throw new AssertionError(name + " is no setting of " + ConfigurationMetadataTest.SOURCES.stream()
                .map(s -> s.descriptor().prefix()).toList());
    }

    /** An environment with only {@code source} in it (not the JVM's own environment or system properties). */
    private static TxoutboxSettings settings(PropertySource<?> source) {
        AbstractEnvironment environment = new AbstractEnvironment() { };
        environment.getPropertySources().addFirst(source);
        return new TxoutboxSettings(environment);
    }

    /** The process environment as Spring Boot sees it: a {@code systemEnvironment} source, relaxed names. */
    private static SystemEnvironmentPropertySource environment(String variable, String value) {
        return new SystemEnvironmentPropertySource(StandardEnvironment.SYSTEM_ENVIRONMENT_PROPERTY_SOURCE_NAME,
                Map.of(variable, value));
    }

    /** An allowed value other than the default. */
    private static String sample(StarterSettings.Setting s) {
        return s.allowed().stream().filter(v -> !v.equals(s.defaultText())).findFirst().orElse("sample");
    }

    /** A valid value of the setting's type, other than its default where the type allows. */
    static String sample(ConfigDescriptor.Setting s) {
        if ("bytes".equals(s.unit())) {
            return "3MB";
        }
        Class<?> t = s.type();
        if (t.isEnum()) {
            Object[] constants = t.getEnumConstants();
            return ((Enum<?>) constants[constants.length - 1]).name().toLowerCase(Locale.ROOT).replace('_', '-');
        }
        if (t == Integer.class || t == Long.class) {
            return "3";
        }
        if (t == Double.class) {
            return "0.5".equals(s.defaultText()) ? "0.25" : "0.5";
        }
        if (t == Boolean.class) {
            return String.valueOf(!Boolean.TRUE.equals(s.defaultValue()));
        }
        if (t == Duration.class) {
            return "3s".equals(s.defaultText()) ? "4s" : "3s";
        }
        if (t == Instant.class) {
            return "2026-01-01T00:00:00Z";
        }
        return "sample-" + s.name().replace('.', '-');
    }
}
