package io.txoutbox.internal.config;

import io.txoutbox.ConfigDescriptor;
import io.txoutbox.ConfigDescriptor.Setting;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.BiConsumer;
import java.util.function.Function;

/**
 * Builds a configuration record's {@link ConfigDescriptor}, one setting at a time, in the order the docs list them:
 * {@code DescriptorBuilder.<PollingRelay.Builder, RelayConfig>define("relay").add(...)...build()}.
 */
public final class DescriptorBuilder<B, C> {

    private final String component;
    private final String prefix;
    private final Map<String, Descriptor.Binding<B, C>> bindings = new LinkedHashMap<>();

    private DescriptorBuilder(String component) {
        this.component = component;
        this.prefix = Checks.settingName(component);
    }

    /**
     * Starts the descriptor of a component whose builder properties are named {@code component.x} in messages
     * ({@code "relay"}, {@code "inboxWorker"}); its settings live under {@code txoutbox.<component in kebab case>}.
     */
    public static <B, C> DescriptorBuilder<B, C> define(String component) {
        return new DescriptorBuilder<>(component);
    }

    /**
     * A setting named after its builder property ({@code "batchSize"} → {@code batch-size}); {@code unit} is
     * {@code ""} for none, {@code "bytes"} for a size (text form {@code 16MB}).
     */
    public <V> DescriptorBuilder<B, C> add(String property, Class<V> type, V defaultValue, String unit, String doc,
            BiConsumer<B, V> setter, Function<C, V> getter) {
        return put(property, type, defaultValue, unit, doc, false, setter, getter);
    }

    /** {@link #add} for a value that is never logged (a password, a token). */
    public <V> DescriptorBuilder<B, C> addSecret(String property, Class<V> type, String doc, BiConsumer<B, V> setter,
            Function<C, V> getter) {
        return put(property, type, null, "", doc, true, setter, getter);
    }

    @SuppressWarnings("unchecked")
    private <V> DescriptorBuilder<B, C> put(String property, Class<V> type, V defaultValue, String unit, String doc,
            boolean secret, BiConsumer<B, V> setter, Function<C, V> getter) {
        String name = Values.kebab(property);
        if (bindings.containsKey(name)) {
            throw new IllegalStateException(component + ": setting " + name + " defined twice");
        }
        Setting s = new Setting(prefix, name, type, defaultValue, unit, doc, secret);
        bindings.put(name, new Descriptor.Binding<>(s, (BiConsumer<B, Object>) setter, (Function<C, Object>) getter));
        return this;
    }

    public ConfigDescriptor<B, C> build() {
        return new Descriptor<>(prefix, component, Collections.unmodifiableMap(new LinkedHashMap<>(bindings)));
    }
}
