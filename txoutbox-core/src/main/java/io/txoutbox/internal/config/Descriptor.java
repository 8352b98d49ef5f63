package io.txoutbox.internal.config;

import io.txoutbox.ConfigDescriptor;
import io.txoutbox.InvalidConfigurationException;
import java.time.Duration;
import java.time.Instant;
import java.time.format.DateTimeParseException;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.BiConsumer;
import java.util.function.Function;
import java.util.stream.Collectors;

/** The {@link ConfigDescriptor} a {@link DescriptorBuilder} builds: each setting bound to its builder and record. */
final class Descriptor<B, C> implements ConfigDescriptor<B, C> {

    record Binding<B, C>(Setting setting, BiConsumer<B, Object> setter, Function<C, Object> getter) {
    }

    private final String prefix;
    private final String component;
    private final Map<String, Binding<B, C>> bindings;

    Descriptor(String prefix, String component, Map<String, Binding<B, C>> bindings) {
        this.prefix = prefix;
        this.component = component;
        this.bindings = bindings;
    }

    @Override
    public String prefix() {
        return prefix;
    }

    @Override
    public List<Setting> settings() {
        return bindings.values().stream().map(Binding::setting).toList();
    }

    @Override
    public Optional<Setting> setting(String name) {
        Binding<B, C> b = bindings.get(local(name));
        return b == null ? Optional.empty() : Optional.of(b.setting());
    }

    @Override
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

    @Override
    public Map<String, Object> values(C config) {
        Map<String, Object> out = new LinkedHashMap<>();
        bindings.forEach((name, b) -> out.put(name, b.getter().apply(config)));
        return out;
    }

    @Override
    public String describe(C config) {
        return bindings.values().stream().map(b -> {
            Object v = b.getter().apply(config);
            String shown = v == null ? "unset" : b.setting().secret() ? "****" : Values.text(v, b.setting().unit());
            return b.setting().name() + "=" + shown;
        }).collect(Collectors.joining(", "));
    }

    private String local(String name) {
        return name.startsWith(prefix + ".") ? name.substring(prefix.length() + 1) : name;
    }

    private static Object parse(Setting s, Object value) {
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
            if (boxed == Instant.class) {
                return Instant.parse(text.trim());
            }
            if (boxed == String.class) {
                return text;
            }
            if (boxed.isEnum()) {
                return parseEnum(boxed, text);
            }
        } catch (IllegalArgumentException | ArithmeticException | DateTimeParseException e) {
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

    private static Class<?> boxed(Class<?> t) {
        if (!t.isPrimitive()) {
            return t;
        }
        return t == int.class ? Integer.class : t == long.class ? Long.class : t == boolean.class ? Boolean.class
                : t == double.class ? Double.class : t;
    }
}
