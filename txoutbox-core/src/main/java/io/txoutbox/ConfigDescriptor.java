package io.txoutbox;

import io.txoutbox.internal.config.Values;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;

/**
 * The settings of one component's configuration, each under one name everywhere: the builder call
 * ({@code PollingRelay.builder().batchSize(500)}), the Spring Boot property ({@code txoutbox.relay.batch-size}), the
 * environment variable ({@code TXOUTBOX_RELAY_BATCH_SIZE}), the command line and the configuration reference in the
 * docs, which is generated from these descriptors. Each configuration record publishes its own as
 * {@code DESCRIPTOR} ({@link RelayConfig#DESCRIPTOR}, ...).
 *
 * <pre>{@code
 * PollingRelay relay = PollingRelay.builder()
 *         .dataSource(dataSource).transport(transport)
 *         .settings(Map.of("batch-size", "500", "poll-interval", "250ms"))   // text, parsed as documented
 *         .build();
 * }</pre>
 *
 * Settings that are objects (a {@code DataSource}, a transport, a listener, a {@code Clock}) are builder calls
 * only. Text forms ({@code internal.config.Values}): durations {@code 500ms}, {@code 5s}, {@code 2m}, {@code 1h},
 * {@code 7d} (also {@code ns}, {@code us}) or ISO-8601, a bare number is milliseconds, never negative; sizes
 * {@code 16MB} with {@code B}, {@code KB}, {@code MB}, {@code GB} (powers of 1024; whole numbers; a bare number is
 * bytes); enums by name in any case. Only the configuration records make descriptors.
 *
 * @param <B> the component's builder
 * @param <C> the component's configuration record
 */
public interface ConfigDescriptor<B, C> {

    /**
     * One setting: its kebab-case {@code name} under the component's {@code prefix}, its value type, default
     * ({@code null}: unset), unit ({@code ""} for none), a one-line description, and whether its value is secret
     * (never logged).
     */
    record Setting(String prefix, String name, Class<?> type, Object defaultValue, String unit, String doc,
            boolean secret) {

        /** {@code txoutbox.relay.batch-size}. */
        public String property() {
            return prefix + "." + name;
        }

        /** {@code TXOUTBOX_RELAY_BATCH_SIZE}. */
        public String environmentVariable() {
            return property().replace('.', '_').replace('-', '_').toUpperCase(Locale.ROOT);
        }

        /** The default in the text form the setting accepts; {@code ""} when there is none. */
        public String defaultText() {
            return defaultValue == null ? "" : Values.text(defaultValue, unit);
        }
    }

    /** {@code txoutbox.relay}. */
    String prefix();

    /** Every setting, in the order the docs list them. */
    List<Setting> settings();

    /** The setting of this kebab-case name (or full property name). */
    Optional<Setting> setting(String name);

    /**
     * Applies {@code values} (by kebab-case name or full property name; a value is its text form or the typed
     * value) to {@code builder}. Every value is read before any is applied, so a bad one changes nothing: an
     * unknown name or an unreadable value fails with {@link InvalidConfigurationException} naming the property.
     */
    B apply(B builder, Map<String, ?> values);

    /** The settings' values in {@code config}, by name, secrets included (for binding, never for logs). */
    Map<String, Object> values(C config);

    /** The effective configuration for a log line: {@code batch-size=2000, poll-interval=500ms, ...}, secrets masked. */
    String describe(C config);
}
