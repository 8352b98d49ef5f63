package io.txoutbox.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.txoutbox.ConfigDescriptor;
import io.txoutbox.InvalidConfigurationException;
import io.txoutbox.OutboxSchema;
import io.txoutbox.RetryPolicy;
import io.txoutbox.kafka.internal.ConsumerClients;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.postgresql.ds.PGSimpleDataSource;

/** The inbox consumer's configuration record and descriptor, without a broker or a database. */
class KafkaInboxConsumerConfigTest {

    private static final String SECRET = "s3cr3t-value-that-must-not-leak";
    /** Required, or derived from a required one (the consumer name is the group id unless given). */
    private static final Set<String> NO_DEFAULT = Set.of("bootstrap-servers", "group-id", "topics", "consumer");

    private static KafkaInboxConsumer.Builder builder() {
        return KafkaInboxConsumer.builder().bootstrapServers("127.0.0.1:1").groupId("billing").topics("orders");
    }

    @Test
    void aNullSchemaIsRefusedAtTheCallWithTheMessageOfEveryBuilder() {
        assertThatThrownBy(() -> KafkaInboxConsumer.builder().schema(null))
                .isInstanceOf(InvalidConfigurationException.class)
                .hasMessage("kafkaInbox.schema must not be null: pass OutboxSchema.defaults() or "
                        + "OutboxSchema.builder()...build() (settings txoutbox.schema.*)");
    }

    @Test
    void everyDescriptorDefaultIsTheBuildersDefault() {
        KafkaInboxConsumerConfig config = builder().config();
        Map<String, Object> values = KafkaInboxConsumerConfig.DESCRIPTOR.values(config);
        for (ConfigDescriptor.Setting s : KafkaInboxConsumerConfig.DESCRIPTOR.settings()) {
            assertThat(s.property()).startsWith("txoutbox.kafka-inbox.");
            if (NO_DEFAULT.contains(s.name())) {
                assertThat(s.defaultValue()).as(s.property()).isNull();
            } else {
                assertThat(values.get(s.name())).as(s.property()).isEqualTo(s.defaultValue());
            }
        }
        assertThat(config.consumer()).as("the consumer name defaults to the group id").isEqualTo("billing");
        assertThat(config.retry()).isEqualTo(KafkaInboxConsumer.DEFAULT_RETRY);
        assertThat(config.pollTimeout()).isEqualTo(KafkaInboxConsumer.DEFAULT_POLL_TIMEOUT);
        assertThat(config.schema()).isEqualTo(OutboxSchema.defaults());
    }

    @Test
    void settingsAsTextSetTheConfiguration() {
        KafkaInboxConsumerConfig config = KafkaInboxConsumer.builder().settings(Map.ofEntries(
                Map.entry("txoutbox.kafka-inbox.bootstrap-servers", "b:9092"), Map.entry("group-id", "billing"),
                Map.entry("topics", "orders, payments,"), Map.entry("consumer", "billing-v2"),
                Map.entry("name", "billing-inbox"), Map.entry("dead-letter-topic", "orders.billing.dlt"),
                Map.entry("poll-timeout", "250ms"), Map.entry("check-versions", "true"),
                Map.entry("retry.max-attempts", "3"), Map.entry("retry.initial-backoff", "1s"),
                Map.entry("security-protocol", "SASL_SSL"), Map.entry("sasl-jaas-config", SECRET))).config();
        assertThat(config.groupId()).isEqualTo("billing");
        assertThat(config.topics()).containsExactly("orders", "payments");
        assertThat(config.consumer()).isEqualTo("billing-v2");
        assertThat(config.name()).isEqualTo("billing-inbox");
        assertThat(config.deadLetterTopic()).isEqualTo("orders.billing.dlt");
        assertThat(config.pollTimeout()).isEqualTo(Duration.ofMillis(250));
        assertThat(config.checkVersions()).isTrue();
        assertThat(config.retry().maxAttempts()).isEqualTo(3);
        assertThat(config.retry().initialBackoff()).isEqualTo(Duration.ofSeconds(1));
        assertThat(config.retry().maxBackoff()).isEqualTo(KafkaInboxConsumer.DEFAULT_RETRY.maxBackoff());
        assertThat(config.properties()).containsEntry("bootstrap.servers", "b:9092")
                .containsEntry("security.protocol", "SASL_SSL").containsEntry("sasl.jaas.config", SECRET);
        Properties consumer = ConsumerClients.consumerProperties(config);
        assertThat(consumer).containsEntry("group.id", "billing").containsEntry("enable.auto.commit", "false")
                .containsEntry("isolation.level", "read_committed").containsEntry("client.id",
                        "txoutbox-inbox-billing-inbox").containsEntry("sasl.jaas.config", SECRET);
        assertThat(ConsumerClients.producerProperties(config)).containsEntry("acks", "all").containsEntry("security.protocol",
                "SASL_SSL").doesNotContainKey("group.id");
    }

    @Test
    void secretsAreMaskedInTheDescriptionAndInToString() {
        KafkaInboxConsumerConfig config = builder().settings(Map.of("sasl-jaas-config", SECRET))
                .property("ssl.key.password", SECRET).property("my.token", SECRET).config();
        String described = KafkaInboxConsumerConfig.DESCRIPTOR.describe(config);
        assertThat(described).contains("sasl-jaas-config=****", "ssl-key-password=****", "group-id=billing",
                "poll-timeout=500ms", "retry.max-attempts=5").doesNotContain(SECRET);
        assertThat(config.toString()).contains("my.token=[hidden]", "sasl.jaas.config=[hidden]")
                .doesNotContain(SECRET);
    }

    @Test
    void anUnknownNameOrABadValueFailsNamingTheSettingAndChangesNothing() {
        KafkaInboxConsumer.Builder b = builder();
        assertThatThrownBy(() -> b.settings(Map.of("name", "x", "no-such", "1")))
                .isInstanceOf(InvalidConfigurationException.class).hasMessageContaining("no-such")
                .hasMessageContaining("txoutbox.kafka-inbox");
        assertThatThrownBy(() -> b.settings(Map.of("name", "x", "poll-timeout", "soon")))
                .isInstanceOf(InvalidConfigurationException.class)
                .hasMessageContaining("txoutbox.kafka-inbox.poll-timeout");
        assertThat(b.config().name()).isEqualTo(KafkaInboxConsumerConfig.DEFAULT_NAME);
    }

    @Test
    void badValuesAreRefusedNamingThePropertyAndTheSetting() {
        assertThatThrownBy(() -> KafkaInboxConsumer.builder().groupId("g").topics("t").config())
                .isInstanceOf(InvalidConfigurationException.class).hasMessage("kafkaInbox.bootstrapServers is "
                        + "required (setting txoutbox.kafka-inbox.bootstrap-servers)");
        assertThatThrownBy(() -> builder().groupId(" ").config()).hasMessageContaining("kafkaInbox.groupId is "
                + "required").hasMessageContaining("txoutbox.kafka-inbox.group-id");
        assertThatThrownBy(() -> builder().topics().config()).hasMessageContaining("kafkaInbox.topics must name");
        assertThatThrownBy(() -> builder().name("no spaces").config())
                .hasMessageContaining("kafkaInbox.name must be 1 to 100 characters")
                .hasMessageContaining("txoutbox.kafka-inbox.name");
        assertThatThrownBy(() -> builder().consumer("").config())
                .hasMessageContaining("kafkaInbox.consumer must be 1 to 200 characters");
        assertThatThrownBy(() -> builder().pollTimeout(Duration.ZERO).config())
                .hasMessage("kafkaInbox.pollTimeout must be > 0, was 0ms (setting txoutbox.kafka-inbox.poll-timeout)");
        assertThatThrownBy(() -> builder().deadLetterTopic("..").config())
                .hasMessageContaining("kafkaInbox.deadLetterTopic");
        assertThatThrownBy(() -> builder().property("enable.auto.commit", "true").config())
                .hasMessageContaining("enable.auto.commit=true is refused");
        assertThatThrownBy(() -> builder().settings(Map.of("retry.jitter", "1")).config())
                .hasMessage("kafkaInbox.retry.jitter must be in [0, 1), was 1.0 "
                        + "(setting txoutbox.kafka-inbox.retry.jitter)");
        assertThatThrownBy(() -> builder().retry(null)).isInstanceOf(InvalidConfigurationException.class)
                .hasMessageContaining("kafkaInbox.retry must not be null");
    }

    @Test
    void buildChecksTheObjectsAndTheMode() {
        PGSimpleDataSource ds = new PGSimpleDataSource();
        assertThatThrownBy(() -> builder().storeInInbox().build())
                .isInstanceOf(InvalidConfigurationException.class).hasMessage("kafkaInbox.dataSource is required");
        assertThatThrownBy(() -> builder().dataSource(ds).build())
                .hasMessageContaining("exactly one mode");
        assertThatThrownBy(() -> builder().dataSource(ds).storeInInbox().handler((c, e) -> { }).build())
                .hasMessageContaining("exactly one mode");
        assertThatThrownBy(() -> builder().dataSource(ds).handler((c, e) -> { }).build())
                .hasMessageContaining("kafkaInbox.deadLetterTopic is required with handler(...)");
        assertThatThrownBy(() -> builder().dataSource(ds).storeInInbox().eventIds(null).build())
                .hasMessageContaining("kafkaInbox.eventIds must not be null");
        try (KafkaInboxConsumer c = builder().dataSource(ds).storeInInbox().retry(RetryPolicy.defaults())
                .build()) {
            assertThat(c.stats().polled()).isZero();
        }
    }

    @Test
    @SuppressWarnings("removal")
    void theDeprecatedConsumerNameIsTheSameSetting() {
        assertThat(builder().consumerName("legacy").config().consumer()).isEqualTo("legacy");
        assertThat(builder().config().topics()).isEqualTo(List.of("orders"));
    }
}
