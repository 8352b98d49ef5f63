package io.txoutbox.spring.internal;

import io.txoutbox.InvalidConfigurationException;
import java.util.List;
import java.util.Locale;

/**
 * The settings that exist only in the starter (everything else is bound from core's descriptors). Listed here once:
 * the configuration metadata and the docs are checked against this list.
 */
public final class StarterSettings {

    private StarterSettings() {
    }

    /** One starter setting: its property, default text, allowed values (empty: free text) and one-line doc. */
    public record Setting(String property, String defaultText, List<String> allowed, String doc) {

        public String read(TxoutboxSettings settings) {
            String value = settings.text(this).trim().toLowerCase(Locale.ROOT);
            if (!allowed.isEmpty() && !allowed.contains(value)) {
                throw new InvalidConfigurationException(property + " must be one of " + String.join(", ", allowed)
                        + ", was '" + value + "' (setting " + property + ")");
            }
            return value;
        }
    }

    public static final Setting ENABLED = new Setting("txoutbox.enabled", "true", List.of("true", "false"),
            "Turns the whole auto-configuration off");
    public static final Setting RELAY_ENABLED = new Setting("txoutbox.relay.enabled", "true", List.of("true", "false"),
            "Runs the relay in this application; false for services that only write (a relay runs elsewhere)");
    public static final Setting TRANSPORT = new Setting("txoutbox.transport", "kafka", List.of("kafka", "in-memory"),
            "The relay's transport: kafka (Spring's spring.kafka.* connection), or in-memory (txoutbox-test on the "
                    + "classpath: an InMemoryTransport bean for tests)");
    public static final Setting MIGRATE = new Setting("txoutbox.schema.migrate", "auto",
            List.of("auto", "always", "never"),
            "auto: apply the outbox's scripts on start unless Flyway or Liquibase runs (then only check the version); "
                    + "always: apply them in any case, after Flyway or Liquibase (the way with Liquibase); "
                    + "never (check only)");

    public static final Setting GUARD_KAFKA_TEMPLATE = new Setting("txoutbox.guard.kafka-template", "off",
            List.of("off", "warn", "fail"),
            "A KafkaTemplate send inside a database transaction or from its after-commit callbacks (the dual write): "
                    + "off; warn (logged once per call site, sent); fail (IllegalStateException, nothing sent)");

    public static final List<Setting> ALL = List.of(ENABLED, RELAY_ENABLED, TRANSPORT, MIGRATE, GUARD_KAFKA_TEMPLATE);
}
