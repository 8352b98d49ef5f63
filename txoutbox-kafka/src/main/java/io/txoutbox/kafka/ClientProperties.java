package io.txoutbox.kafka;

import java.util.Map;
import java.util.Properties;
import java.util.function.BiConsumer;

/**
 * The bulk forms of a builder's {@code property(key, value)}, shared by {@link KafkaTransport} and
 * {@link KafkaInboxConsumer}.
 */
final class ClientProperties {

    private ClientProperties() {
    }

    /** Each entry of {@code from}, as {@code property(key, value)} one by one. */
    static void copy(Map<String, ?> from, BiConsumer<String, Object> property) {
        from.forEach(property);
    }

    /** Each of {@code from}'s string properties (defaults included), as {@code property(key, value)} one by one. */
    static void copy(Properties from, BiConsumer<String, Object> property) {
        for (String key : from.stringPropertyNames()) {
            property.accept(key, from.getProperty(key));
        }
    }
}
