package io.txoutbox;

import io.txoutbox.internal.config.Checks;
import io.txoutbox.internal.config.Values;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.function.BiConsumer;
import java.util.function.Function;
import java.util.stream.Collectors;

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
 * bytes); enums by name in any case.
 *
 * @param <B> the component's builder
 * @param <C> the component's configuration record
 */
public final class ConfigDescriptor<B, C> {

    /**
     * One setting: its kebab-case {@code name} under the component's {@code prefix}, its value type, default
     * ({@code null}: unset), unit ({@code ""} for none), a one-line description, and whether its value is secret
     * (never logged).
     */
    public record Setting(String prefix, String name, Class<?> type, Object defaultValue, String unit, String doc,
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
            return defaultValue == null ? "" : text(defaultValue, unit);
        }
    }

    private record Binding<B, C>(Setting setting, BiConsumer<B, Object> setter, Function<C, Object> getter) {
    }

    private final String prefix;
    private final String component;
    private final Map<String, Binding<B, C>> bindings;

    private ConfigDescriptor(String prefix, String component, Map<String, Binding<B, C>> bindings) {
        this.prefix = prefix;
        this.component = component;
        this.bindings = bindings;
    }

    /**
     * Starts the descriptor of a component whose builder properties are named {@code component.x} in messages
     * ({@code "relay"}, {@code "inboxWorker"}); its settings live under {@code txoutbox.<component in kebab case>}.
     */
    public static <B, C> Definition<B, C> define(String component) {
        return new Definition<>(component);
    }

    /** {@code txoutbox.relay}. */
    public String prefix() {
        return prefix;
    }

    public List<Setting> settings() {
        return bindings.values().stream().map(Binding::setting).toList();
    }

    /** The setting of this kebab-case name (or full property name). */
    public Optional<Setting> setting(String name) {
        Binding<B, C> b = bindings.get(local(name));
        return b == null ? Optional.empty() : Optional.of(b.setting());
    }

    /**
     * Applies {@code values} (by kebab-case name or full property name; a value is its text form or the typed
     * value) to {@code builder}. Every value is read before any is applied, so a bad one changes nothing: an
     * unknown name or an unreadable value fails with {@link InvalidConfigurationException} naming the property.
     */
    public B apply(B builder, Map<String, ?> values) {
        Map<Binding<B, C>, Object> parsed = new LinkedHashMap<>();
        for (Map.Entry<String, ?> e : values.entrySet()) {
            Binding<B, C> b = bindings.get(local(e.getKey()));
            if (b == null) {
                throw new InvalidConfigurationException(e.getKey() + " is not a setting of " + component
                        + " (" + prefix + "); its settings are " + String.join(", ", bindings.keySet()));
            }
            if (parsed.containsKey(b)) {
                throw new InvalidConfigurationException(b.setting().property() + " is given twice (as "
                        + e.getKey() + " and by its other name): give it once");
            }
            parsed.put(b, parse(b.setting(), e.getValue()));
        }
        parsed.forEach((b, v) -> b.setter().accept(builder, v));
        return builder;
    }

    /** The settings' values in {@code config}, by name, secrets included (for binding, never for logs). */
    public Map<String, Object> values(C config) {
        Map<String, Object> out = new LinkedHashMap<>();
        bindings.forEach((name, b) -> out.put(name, b.getter().apply(config)));
        return out;
    }

    /** The effective configuration for a log line: {@code batch-size=2000, poll-interval=500ms, ...}, secrets masked. */
    public String describe(C config) {
        return bindings.values().stream().map(b -> {
            Object v = b.getter().apply(config);
            String shown = v == null ? "unset" : b.setting().secret() ? "****" : text(v, b.setting().unit());
            return b.setting().name() + "=" + shown;
        }).collect(Collectors.joining(", "));
    }

    private String local(String name) {
        return name.startsWith(prefix + ".") ? name.substring(prefix.length() + 1) : name;
    }

    private Object parse(Setting s, Object value) {
        if (value == null) {
            if (s.type().isPrimitive()) {
                throw new InvalidConfigurationException(s.property() + " must not be empty");
            }
            return null; // unset: the builder's own rule for null applies
        }
        Class<?> boxed = boxed(s.type());
        if (boxed.isInstance(value)) {
            return value;
        }
        String text = value.toString();
        try {
            if (boxed == Integer.class) {
                return "bytes".equals(s.unit()) ? Math.toIntExact(Values.parseBytes(text))
                        : Integer.valueOf(text.trim().replace("_", ""));
            }
            if (boxed == Long.class) {
                return "bytes".equals(s.unit()) ? Values.parseBytes(text) : Long.valueOf(text.trim().replace("_", ""));
            }
            if (boxed == Double.class) {
                return Double.valueOf(text.trim());
            }
            if (boxed == Boolean.class) {
                return Values.parseBoolean(text);
            }
            if (boxed == Duration.class) {
                return Values.parseDuration(text);
            }
            if (boxed == java.time.Instant.class) {
                return java.time.Instant.parse(text.trim());
            }
            if (boxed == String.class) {
                return text;
            }
            if (boxed.isEnum()) {
                return parseEnum(boxed, text);
            }
        } catch (IllegalArgumentException | ArithmeticException | java.time.format.DateTimeParseException e) {
            throw new InvalidConfigurationException(s.property() + ": '" + text + "' is not valid ("
                    + (e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage()) + ")"
                    + (s.defaultValue() == null ? "" : "; the default is " + s.defaultText()));
        }
        throw new InvalidConfigurationException(s.property() + " takes a " + boxed.getSimpleName() + ", not "
                + value.getClass().getSimpleName());
    }

    @SuppressWarnings({"unchecked", "rawtypes"})
    private static Object parseEnum(Class<?> type, String text) {
        return Values.parseEnum((Class) type, text);
    }

    private static String text(Object v, String unit) {
        if (v instanceof Duration d) {
            return Values.format(d);
        }
        if (v instanceof Number n && (v instanceof Long || v instanceof Integer) && "bytes".equals(unit)) {
            return Values.formatBytes(n.longValue());
        }
        if (v instanceof Enum<?> e) {
            return e.name();
        }
        return String.valueOf(v);
    }

    private static Class<?> boxed(Class<?> t) {
        if (!t.isPrimitive()) {
            return t;
        }
        return t == int.class ? Integer.class : t == long.class ? Long.class : t == boolean.class ? Boolean.class
                : t == double.class ? Double.class : t;
    }

    /** Builds a descriptor, one setting at a time, in the order the docs list them. */
    public static final class Definition<B, C> {
        private final String component;
        private final String prefix;
        private final Map<String, Binding<B, C>> bindings = new LinkedHashMap<>();

        private Definition(String component) {
            this.component = component;
            this.prefix = Checks.settingName(component);
        }

        /**
         * A setting named after its builder property ({@code "batchSize"} → {@code batch-size}); {@code unit} is
         * {@code ""} for none, {@code "bytes"} for a size (text form {@code 16MB}).
         */
        public <V> Definition<B, C> add(String property, Class<V> type, V defaultValue, String unit, String doc,
                BiConsumer<B, V> setter, Function<C, V> getter) {
            return put(property, type, defaultValue, unit, doc, false, setter, getter);
        }

        /** {@link #add} for a value that is never logged (a password, a token). */
        public <V> Definition<B, C> addSecret(String property, Class<V> type, String doc, BiConsumer<B, V> setter,
                Function<C, V> getter) {
            return put(property, type, null, "", doc, true, setter, getter);
        }

        @SuppressWarnings("unchecked")
        private <V> Definition<B, C> put(String property, Class<V> type, V defaultValue, String unit, String doc,
                boolean secret, BiConsumer<B, V> setter, Function<C, V> getter) {
            String name = Values.kebab(property);
            if (bindings.containsKey(name)) {
                throw new IllegalStateException(component + ": setting " + name + " defined twice");
            }
            Setting s = new Setting(prefix, name, type, defaultValue, unit, doc, secret);
            bindings.put(name, new Binding<>(s, (BiConsumer<B, Object>) setter, (Function<C, Object>) getter));
            return this;
        }

        public ConfigDescriptor<B, C> build() {
            return new ConfigDescriptor<>(prefix, component,
                    java.util.Collections.unmodifiableMap(new LinkedHashMap<>(bindings)));
        }
    }
}
