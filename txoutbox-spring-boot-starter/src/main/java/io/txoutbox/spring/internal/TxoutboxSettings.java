package io.txoutbox.spring.internal;

import io.txoutbox.ConfigDescriptor;
import java.util.LinkedHashMap;
import java.util.Map;
import org.springframework.boot.context.properties.bind.Bindable;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.core.env.Environment;

/**
 * Reads {@code txoutbox.*} settings from the Spring {@link Environment} by the names of core's configuration
 * descriptors, so one name holds everywhere: {@code txoutbox.relay.batch-size} in a properties or YAML file,
 * {@code TXOUTBOX_RELAY_BATCH_SIZE} in the environment (Spring's relaxed binding), the builder's
 * {@code batchSize(…)} in code. Values are handed to the descriptor as text, so they are parsed and validated by core
 * with the same forms and messages as everywhere else ({@code 500ms}, {@code 16MB}); a bad value fails the start with
 * an {@link io.txoutbox.InvalidConfigurationException} naming the property.
 */
public final class TxoutboxSettings {

    private final Binder binder;

    public TxoutboxSettings(Environment environment) {
        this.binder = Binder.get(environment);
    }

    /** The settings of {@code descriptor} that the environment sets, by kebab-case name. */
    public Map<String, Object> values(ConfigDescriptor<?, ?> descriptor) {
        Map<String, Object> values = new LinkedHashMap<>();
        for (ConfigDescriptor.Setting s : descriptor.settings()) {
            binder.bind(s.property(), Bindable.of(String.class)).ifBound(v -> values.put(s.name(), v));
        }
        return values;
    }

    /** Applies the environment's settings of {@code descriptor} to {@code builder}. */
    public <B> B apply(ConfigDescriptor<B, ?> descriptor, B builder) {
        return descriptor.apply(builder, values(descriptor));
    }

    /** A starter-only text setting ({@link StarterSettings}). */
    public String text(StarterSettings.Setting setting) {
        return binder.bind(setting.property(), Bindable.of(String.class)).orElse(setting.defaultText());
    }
}
