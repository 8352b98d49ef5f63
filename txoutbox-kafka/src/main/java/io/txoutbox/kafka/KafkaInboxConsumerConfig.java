package io.txoutbox.kafka;

import io.txoutbox.ConfigDescriptor;
import io.txoutbox.OutboxSchema;
import io.txoutbox.RetryPolicy;
import io.txoutbox.internal.config.Checks;
import io.txoutbox.internal.config.DescriptorBuilder;
import io.txoutbox.internal.config.RetryDraft;
import io.txoutbox.kafka.internal.ClientProperties;
import java.time.Duration;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.consumer.ConsumerConfig;

/**
 * The validated, immutable configuration of a {@link KafkaInboxConsumer}; see {@link KafkaInboxConsumer.Builder} for
 * what each value does. The objects (the {@code DataSource}, the handler, the event-id function, the permanent-failure
 * test, the after-store callback) and the mode stay on the builder.
 *
 * @param schema          where the inbox tables are
 * @param groupId         the Kafka consumer group (offsets are committed per group)
 * @param topics          the topics subscribed to
 * @param consumer        the inbox consumer name (dedupe scope); the group id when not given
 * @param name            names the loop in logs and its thread
 * @param deadLetterTopic where failed records go; {@code null} for none (store mode only)
 * @param pollTimeout     the longest one poll waits for records
 * @param retry           handle mode: attempts and backoff of a record's transient failures
 * @param checkVersions   handle mode: skip records whose aggregate version is not above the applied one
 * @param properties      the user's Kafka client properties (TLS, SASL, {@code max.poll.records}, ...)
 */
public record KafkaInboxConsumerConfig(OutboxSchema schema, String groupId, List<String> topics, String consumer,
        String name, String deadLetterTopic, Duration pollTimeout, RetryPolicy retry, boolean checkVersions,
        Map<String, Object> properties) {

    public static final String DEFAULT_NAME = "inbox";
    public static final Duration DEFAULT_POLL_TIMEOUT = Duration.ofMillis(500);
    /** Fewer and shorter than the relay's: a paused partition holds up every later record of it. */
    public static final RetryPolicy DEFAULT_RETRY = RetryPolicy.defaults().withMaxAttempts(5)
            .withBackoff(Duration.ofMillis(500), Duration.ofSeconds(30));
    public static final boolean DEFAULT_CHECK_VERSIONS = false;
    /**
     * Every setting of the inbox consumer ({@code txoutbox.kafka-inbox.*}). As for the transport, arbitrary Kafka
     * client properties stay builder calls ({@code property(key, value)}); the security settings listed here are
     * views of them, and their secrets are never logged.
     */
    public static final ConfigDescriptor<KafkaInboxConsumer.Builder, KafkaInboxConsumerConfig> DESCRIPTOR =
            ClientProperties.addSecuritySettings(RetryDraft.addSettings(
                    DescriptorBuilder.<KafkaInboxConsumer.Builder, KafkaInboxConsumerConfig>define("kafkaInbox")
                            .add("bootstrapServers", String.class, null, "", "Kafka's bootstrap.servers: "
                                    + "comma-separated host:port list (required)",
                                    KafkaInboxConsumer.Builder::bootstrapServers,
                                    c -> ClientProperties.text(c.properties(), ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG))
                            .add("groupId", String.class, null, "", "The Kafka consumer group; offsets are committed "
                                    + "per group (required)", KafkaInboxConsumer.Builder::groupId,
                                    KafkaInboxConsumerConfig::groupId)
                            .add("topics", String.class, null, "", "Comma-separated topics to subscribe to (required)",
                                    (b, v) -> b.topics(v == null ? new String[0] : split(v)),
                                    c -> String.join(",", c.topics()))
                            .add("consumer", String.class, null, "", "The inbox consumer name, the dedupe scope "
                                    + "(default: the group id); the same setting as the inbox worker's",
                                    KafkaInboxConsumer.Builder::consumer, KafkaInboxConsumerConfig::consumer)
                            .add("name", String.class, DEFAULT_NAME, "", "Names the loop in logs and its thread",
                                    KafkaInboxConsumer.Builder::name, KafkaInboxConsumerConfig::name)
                            .add("deadLetterTopic", String.class, null, "", "Where records that cannot be stored or "
                                    + "handled go (required in handle mode)", KafkaInboxConsumer.Builder::deadLetterTopic,
                                    KafkaInboxConsumerConfig::deadLetterTopic)
                            .add("pollTimeout", Duration.class, DEFAULT_POLL_TIMEOUT, "", "The longest one poll "
                                    + "waits for records", KafkaInboxConsumer.Builder::pollTimeout,
                                    KafkaInboxConsumerConfig::pollTimeout)
                            .add("checkVersions", Boolean.class, DEFAULT_CHECK_VERSIONS, "", "Handle mode: skip "
                                    + "records whose aggregate version is not above the applied one",
                                    KafkaInboxConsumer.Builder::checkVersions, KafkaInboxConsumerConfig::checkVersions),
                    DEFAULT_RETRY, KafkaInboxConsumer.Builder::retryDraft, KafkaInboxConsumerConfig::retry),
                    KafkaInboxConsumer.Builder::property, (c, key) -> ClientProperties.text(c.properties(), key))
                    .build();

    public KafkaInboxConsumerConfig {
        Checks.notNull("kafkaInbox.properties", properties);
        String bootstrap = ClientProperties.text(properties, ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG);
        if (bootstrap == null || bootstrap.isBlank()) {
            throw Checks.invalid("kafkaInbox.bootstrapServers", "is required");
        }
        if (groupId == null || groupId.isBlank()) {
            throw Checks.invalid("kafkaInbox.groupId", "is required: offsets are committed per group");
        }
        if (topics == null || topics.isEmpty()) {
            throw Checks.invalid("kafkaInbox.topics", "must name at least one topic");
        }
        consumer = Checks.consumer("kafkaInbox.consumer", consumer == null ? groupId : consumer);
        Checks.name("kafkaInbox.name", name);
        Checks.schema("kafkaInbox", schema);
        Checks.notNull("kafkaInbox.retry", retry);
        if (deadLetterTopic != null) {
            Checks.topic("kafkaInbox.deadLetterTopic", deadLetterTopic);
        }
        Checks.positive("kafkaInbox.pollTimeout", pollTimeout);
        Object autoCommit = properties.get(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG);
        if (autoCommit != null && Boolean.parseBoolean(String.valueOf(autoCommit))) {
            throw new io.txoutbox.InvalidConfigurationException("kafkaInbox: enable.auto.commit=true is refused: "
                    + "offsets must be committed only after the database commit");
        }
        topics = List.copyOf(topics);
        properties = Collections.unmodifiableMap(new HashMap<>(properties));
    }

    private static String[] split(String topics) {
        return Arrays.stream(topics.split(",")).map(String::trim).filter(t -> !t.isEmpty()).toArray(String[]::new);
    }

    /** The settings, then the client properties with their secrets hidden. */
    @Override
    public String toString() {
        return "KafkaInboxConsumerConfig[" + DESCRIPTOR.describe(this) + ", properties="
                + ClientProperties.describe(properties) + "]";
    }
}
