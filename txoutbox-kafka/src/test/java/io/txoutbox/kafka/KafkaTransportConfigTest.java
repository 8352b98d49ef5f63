package io.txoutbox.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.txoutbox.InvalidConfigurationException;
import io.txoutbox.kafka.internal.ClientProperties;
import io.txoutbox.kafka.internal.ProducerSettings;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import io.txoutbox.spi.SendResult;
import io.txoutbox.testing.net.FreePorts;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.config.ConfigDef;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class KafkaTransportConfigTest {

    private static final String SECRET = "s3cr3t-value-that-must-not-leak";

    private static KafkaTransport.Builder builder() {
        return KafkaTransport.builder().bootstrapServers("127.0.0.1:1");
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
            "acks|1|acks",
            "acks|0|acks",
            "enable.idempotence|false|enable.idempotence",
            "max.in.flight.requests.per.connection|6|max.in.flight.requests.per.connection",
            "max.in.flight.requests.per.connection|many|max.in.flight.requests.per.connection",
            "transactional.id|my-id|transactional.id",
            "key.serializer|org.apache.kafka.common.serialization.StringSerializer|key.serializer",
            "value.serializer|org.apache.kafka.common.serialization.StringSerializer|value.serializer",
            "delivery.timeout.ms|1000|delivery.timeout.ms",
            "transaction.timeout.ms|7000|transaction.timeout.ms",
            "linger.ms|soon|linger.ms"})
    void unsafeOverrideIsRejectedNamingTheProperty(String key, String value, String named) {
        assertThatThrownBy(() -> builder().property(key, value).build())
                .isInstanceOf(InvalidConfigurationException.class)
                .hasMessageContaining("'" + named + "'");
    }

    @Test
    void missingBootstrapServersIsRejected() {
        assertThatThrownBy(() -> KafkaTransport.builder().build())
                .isInstanceOf(InvalidConfigurationException.class)
                .hasMessageContaining("bootstrap.servers");
    }

    @Test
    void safeSpellingsOfTheRequiredValuesAreAccepted() {
        try (KafkaTransport t = builder().property("acks", "-1").property("enable.idempotence", true)
                .property("max.in.flight.requests.per.connection", 5).build()) {
            assertThat(t.toString()).contains("acks=-1", "max.in.flight.requests.per.connection=5");
        }
    }

    @Test
    void defaultsAreAppliedAndUserValuesPassThrough() {
        Properties props = new Properties();
        props.setProperty("security.protocol", "SASL_SSL");
        props.setProperty("linger.ms", "20");
        try (KafkaTransport t = builder().properties(props).build()) {
            assertThat(t.toString()).contains("acks=all", "enable.idempotence=true", "linger.ms=20",
                    "batch.size=131072", "compression.type=lz4", "max.block.ms=5000", "request.timeout.ms=5000",
                    "delivery.timeout.ms=8000", "transaction.timeout.ms=15000", "retry.backoff.max.ms=100",
                    "security.protocol=SASL_SSL");
        }
    }

    /** ConcurrentTransactionsRetryIT: a batch refused CONCURRENT_TRANSACTIONS waited up to Kafka's 1 s backoff cap. */
    @Test
    void transactionalLanesRetryWithinATenthOfASecondUnlessTheUserSaysOtherwise() {
        KafkaTransportConfig defaults = KafkaTransportConfig.of(Map.of("bootstrap.servers", "b:9092"), "app-",
                KafkaTransport.DEFAULT_CLOSE_TIMEOUT);
        assertThat(new ProducerSettings(defaults).producerProperties("0"))
                .containsEntry("retry.backoff.max.ms", String.valueOf(KafkaTransport.TRANSACTIONAL_RETRY_BACKOFF_MAX_MS))
                .doesNotContainKey("retry.backoff.ms");
        assertThat(KafkaTransport.TRANSACTIONAL_RETRY_BACKOFF_MAX_MS).isEqualTo(100);

        KafkaTransportConfig userCap = KafkaTransportConfig.of(Map.of("bootstrap.servers", "b:9092",
                "retry.backoff.max.ms", "1000"), "app-", KafkaTransport.DEFAULT_CLOSE_TIMEOUT);
        assertThat(userCap.producerProperties()).containsEntry("retry.backoff.max.ms", "1000");
        KafkaTransportConfig slowerBase = KafkaTransportConfig.of(Map.of("bootstrap.servers", "b:9092",
                "retry.backoff.ms", 500), "app-", KafkaTransport.DEFAULT_CLOSE_TIMEOUT);
        assertThat(slowerBase.producerProperties()).containsEntry("retry.backoff.max.ms", "500");
        KafkaTransportConfig fasterBase = KafkaTransportConfig.of(Map.of("bootstrap.servers", "b:9092",
                "retry.backoff.ms", "20"), "app-", KafkaTransport.DEFAULT_CLOSE_TIMEOUT);
        assertThat(fasterBase.producerProperties()).containsEntry("retry.backoff.max.ms", "100");
        assertThatThrownBy(() -> builder().property("retry.backoff.ms", "soon").build())
                .isInstanceOf(InvalidConfigurationException.class).hasMessageContaining("'retry.backoff.ms'");

        KafkaTransportConfig idempotent = KafkaTransportConfig.of(Map.of("bootstrap.servers", "b:9092"), "app-",
                KafkaTransport.DEFAULT_CLOSE_TIMEOUT, KafkaTransport.Mode.IDEMPOTENT);
        assertThat(idempotent.producerProperties()).as("no transactions, no CONCURRENT_TRANSACTIONS: Kafka's default")
                .doesNotContainKey("retry.backoff.max.ms");
    }

    @Test
    void idempotentModeHasNoTransactionalIdAndHoldsRecordsUntilTheFlush() {
        KafkaTransportConfig config = KafkaTransportConfig.of(Map.of("bootstrap.servers", "b:9092"), "app-",
                KafkaTransport.DEFAULT_CLOSE_TIMEOUT, KafkaTransport.Mode.IDEMPOTENT);
        assertThat(new ProducerSettings(config).producerProperties("3"))
                .doesNotContainKey("transactional.id")
                .containsEntry("linger.ms", String.valueOf(KafkaTransport.IDEMPOTENT_LINGER_MS))
                .containsEntry("batch.size", String.valueOf(KafkaTransport.IDEMPOTENT_BATCH_SIZE));
        assertThat(new ProducerSettings(config).partitionShareBytes()).isEqualTo(ProducerSettings.MAX_PARTITION_SHARE_BYTES);
    }

    @Test
    void idempotentModeRefusesAShortLingerAndACustomPartitioner() {
        assertThatThrownBy(() -> builder().mode(KafkaTransport.Mode.IDEMPOTENT).property("linger.ms", 5).build())
                .isInstanceOf(InvalidConfigurationException.class)
                .hasMessageContaining("linger.ms").hasMessageContaining("per-key order");
        assertThatThrownBy(() -> builder().mode(KafkaTransport.Mode.IDEMPOTENT)
                .property("partitioner.class", "com.example.MyPartitioner").build())
                .isInstanceOf(InvalidConfigurationException.class)
                .hasMessageContaining("partitioner.class").hasMessageContaining("Mode.TRANSACTIONAL");
        assertThatThrownBy(() -> builder().mode(null).build())
                .isInstanceOf(InvalidConfigurationException.class).hasMessageContaining("mode");
    }

    @Test
    void theDefaultTransactionalIdIsTheOutboxInstallationAndLaneIndexAndAnExplicitPrefixKeepsTheLaneName() {
        UUID installation = UUID.fromString("0f6f3c1e-52b5-4f7e-9d9c-2a1d3c4b5a69");
        io.txoutbox.spi.TransportLane lane = new io.txoutbox.spi.TransportLane("orders-relay-2", 2, installation,
                "db/app.outbox_event", "orders-relay@host:1#1", false);
        KafkaTransportConfig defaults = KafkaTransportConfig.of(Map.of("bootstrap.servers", "b:9092"),
                KafkaTransport.DEFAULT_TRANSACTIONAL_ID_PREFIX, false, KafkaTransport.DEFAULT_CLOSE_TIMEOUT,
                KafkaTransport.Mode.TRANSACTIONAL);
        // not the relay's name: two relays of one outbox with different names share the lanes
        assertThat(new ProducerSettings(defaults).transactionalId(lane)).isEqualTo("txoutbox-" + installation + "-2");
        assertThat(new ProducerSettings(defaults).transactionalId(lane.forDeadLetters())).isEqualTo("txoutbox-" + installation + "-2-dlt");
        KafkaTransportConfig other = KafkaTransportConfig.of(Map.of("bootstrap.servers", "b:9092"),
                KafkaTransport.DEFAULT_TRANSACTIONAL_ID_PREFIX, false, KafkaTransport.DEFAULT_CLOSE_TIMEOUT,
                KafkaTransport.Mode.TRANSACTIONAL);
        io.txoutbox.spi.TransportLane otherOutbox = new io.txoutbox.spi.TransportLane("orders-relay-2", 2,
                UUID.fromString("7d1c2b3a-0000-4000-8000-000000000001"), "db/billing.outbox_event", "x@h:2#1", false);
        assertThat(new ProducerSettings(other).transactionalId(otherOutbox)).isNotEqualTo(new ProducerSettings(defaults).transactionalId(lane));
        KafkaTransportConfig explicit = KafkaTransportConfig.of(Map.of("bootstrap.servers", "b:9092"), "app-",
                true, KafkaTransport.DEFAULT_CLOSE_TIMEOUT, KafkaTransport.Mode.TRANSACTIONAL);
        assertThat(new ProducerSettings(explicit).transactionalId(lane)).isEqualTo("app-orders-relay-2");
        assertThat(new ProducerSettings(explicit).transactionalId(lane.forDeadLetters())).isEqualTo("app-orders-relay-2-dlt");
        assertThat(builder().build().toString()).contains("txoutbox-<installation id>-<lane index>");
        assertThat(builder().transactionalIdPrefix("txoutbox-").build().toString())
                .doesNotContain("<installation id>");
    }

    @Test
    void lanePropertiesCarryTheTransactionalIdPerLane() {
        KafkaTransportConfig config = KafkaTransportConfig.of(
                Map.of("bootstrap.servers", "b:9092", "client.id", "orders"), "app-", KafkaTransport.DEFAULT_CLOSE_TIMEOUT);
        assertThat(new ProducerSettings(config).producerProperties("7"))
                .containsEntry("transactional.id", "app-7")
                .containsEntry("client.id", "orders-7");
        assertThat(new ProducerSettings(config).adminProperties()).containsKey("bootstrap.servers").doesNotContainKey("acks");
    }

    @Test
    void secretsAreMaskedInToStringAndInTheLoggedConfig() {
        Map<String, Object> secrets = Map.of(
                "sasl.jaas.config", "org.apache.kafka.common.security.plain.PlainLoginModule required "
                        + "username=\"u\" password=\"" + SECRET + "\";",
                "ssl.key.password", SECRET,
                "ssl.keystore.password", SECRET,
                "ssl.truststore.password", SECRET,
                "sasl.oauthbearer.client.credentials.client.secret", SECRET,
                "my.token", SECRET);
        PrintStream originalErr = System.err;
        ByteArrayOutputStream captured = new ByteArrayOutputStream();
        String text;
        try {
            // slf4j-simple writes to the current System.err
            System.setErr(new PrintStream(captured, true, StandardCharsets.UTF_8));
            try (KafkaTransport t = builder().properties(secrets).build()) {
                text = t.toString();
            }
        } finally {
            System.setErr(originalErr);
        }
        String logged = captured.toString(StandardCharsets.UTF_8);
        assertThat(logged).contains("transport ready").contains("ssl.key.password=[hidden]");
        assertThat(text).contains("sasl.jaas.config=[hidden]", "my.token=[hidden]");
        assertThat(logged).doesNotContain(SECRET);
        assertThat(text).doesNotContain(SECRET);
    }

    @Test
    void secretMarkersMatchTheUsualKafkaSecretProperties() {
        assertThat(ClientProperties.isSecret("sasl.jaas.config")).isTrue();
        assertThat(ClientProperties.isSecret("ssl.keystore.key")).isTrue();
        assertThat(ClientProperties.isSecret("SSL.TRUSTSTORE.PASSWORD")).isTrue();
        assertThat(ClientProperties.isSecret("bootstrap.servers")).isFalse();
        assertThat(ClientProperties.isSecret("linger.ms")).isFalse();
    }

    /** Every property Kafka itself types {@code PASSWORD}, for the producer, the consumer and the admin client. */
    private static Set<String> passwordTypedProperties() {
        Set<String> names = new TreeSet<>();
        for (ConfigDef def : List.of(ProducerConfig.configDef(), ConsumerConfig.configDef(),
                AdminClientConfig.configDef())) {
            def.configKeys().values().stream().filter(k -> k.type == ConfigDef.Type.PASSWORD)
                    .forEach(k -> names.add(k.name));
        }
        return names;
    }

    private static String text(Throwable t) {
        StringWriter out = new StringWriter();
        t.printStackTrace(new PrintWriter(out));
        return t + "\n" + out;
    }

    /**
     * A unique canary in every PASSWORD-typed property (enumerated from Kafka's ConfigDefs, so a new one in a later
     * kafka-clients is covered too) and in a custom login-module property: it shows in no log line, no exception
     * (build errors, a transport that cannot reach its broker, the inbox consumer's build errors) and no toString().
     */
    @Test
    void aCanaryInEveryPasswordTypedPropertyShowsInNoLogLineExceptionOrToString() throws Exception {
        Set<String> passwordTyped = passwordTypedProperties();
        assertThat(passwordTyped).contains("ssl.key.password", "ssl.keystore.password", "ssl.truststore.password",
                "sasl.jaas.config", "ssl.keystore.key");
        Map<String, String> canaries = new TreeMap<>();
        for (String name : passwordTyped) {
            canaries.put(name, "CANARY-" + UUID.randomUUID());
        }
        canaries.put("login.module.custom.secret", "CANARY-" + UUID.randomUUID());
        Map<String, Object> props = new TreeMap<>(canaries);
        props.put("bootstrap.servers", "127.0.0.1:" + FreePorts.take()); // nothing listens there
        props.put("max.block.ms", "1000");
        props.put("request.timeout.ms", "1000");
        props.put("delivery.timeout.ms", "2000");

        List<String> texts = new ArrayList<>();
        PrintStream originalErr = System.err;
        ByteArrayOutputStream captured = new ByteArrayOutputStream();
        try {
            System.setErr(new PrintStream(captured, true, StandardCharsets.UTF_8));
            for (Map.Entry<String, Object> bad : List.of(Map.entry("acks", (Object) "1"),
                    Map.entry("linger.ms", (Object) "soon"), Map.entry("delivery.timeout.ms", (Object) "1"))) {
                Map<String, Object> wrong = new TreeMap<>(props);
                wrong.put(bad.getKey(), bad.getValue());
                try {
                    KafkaTransport.builder().properties(wrong).build().close();
                    throw new AssertionError("accepted " + bad);
                } catch (InvalidConfigurationException e) {
                    texts.add(text(e));
                }
            }
            try (KafkaTransport t = KafkaTransport.builder().properties(props).build()) {
                texts.add(t.toString());
                List<SendResult> results = t.send("0", List.of(TestRecords.json("orders", "k1", "{}")))
                        .toCompletableFuture().get(60, TimeUnit.SECONDS);
                assertThat(results).hasSize(1);
                assertThat(results.get(0).isDelivered()).as("nothing listens on the bootstrap port").isFalse();
                texts.add(text(((SendResult.Failed) results.get(0)).cause()));
                texts.add(t.toString());
            }
            // the same over SSL: the producer cannot even be built from the canary key material
            Map<String, Object> ssl = new TreeMap<>(props);
            ssl.put("security.protocol", "SSL");
            ssl.put("ssl.keystore.type", "PEM");
            ssl.put("ssl.truststore.type", "PEM");
            try (KafkaTransport t = KafkaTransport.builder().properties(ssl).build()) {
                List<SendResult> results = t.send("0", List.of(TestRecords.json("orders", "k1", "{}")))
                        .toCompletableFuture().get(60, TimeUnit.SECONDS);
                assertThat(results.get(0).isDelivered()).as("no producer from canary key material").isFalse();
                texts.add(text(((SendResult.Failed) results.get(0)).cause()));
                texts.add(t.toString());
            }
            try {
                KafkaInboxConsumer.Builder inbox = KafkaInboxConsumer.builder().topics("orders");
                props.forEach(inbox::property);
                inbox.build();
                throw new AssertionError("accepted an inbox consumer without a group id");
            } catch (InvalidConfigurationException e) {
                texts.add(text(e));
            }
        } finally {
            System.setErr(originalErr);
        }
        String logged = captured.toString(StandardCharsets.UTF_8);
        assertThat(logged).contains("transport ready");
        texts.add(logged);
        for (Map.Entry<String, String> canary : canaries.entrySet()) {
            for (String text : texts) {
                assertThat(text).as("the value of %s", canary.getKey()).doesNotContain(canary.getValue());
            }
        }
    }

    @Test
    void everyDescriptorDefaultIsTheBuildersDefault() {
        Map<String, Object> values = KafkaTransportConfig.DESCRIPTOR.values(builder().config());
        for (io.txoutbox.ConfigDescriptor.Setting s : KafkaTransportConfig.DESCRIPTOR.settings()) {
            if (!s.name().equals("bootstrap-servers")) {
                assertThat(values.get(s.name())).as(s.property()).isEqualTo(s.defaultValue());
            }
            assertThat(s.property()).startsWith("txoutbox.kafka.");
        }
    }

    @Test
    void settingsAsTextSetTheConfiguration() {
        KafkaTransportConfig config = KafkaTransport.builder().settings(Map.of(
                "txoutbox.kafka.bootstrap-servers", "b:9092", "mode", "idempotent", "close-timeout", "2s",
                "delivery-timeout", "30s", "transactional-id-prefix", "app-", "security-protocol", "SASL_SSL",
                "sasl-jaas-config", SECRET)).config();
        assertThat(config.mode()).isEqualTo(KafkaTransport.Mode.IDEMPOTENT);
        assertThat(config.closeTimeout()).isEqualTo(java.time.Duration.ofSeconds(2));
        assertThat(config.explicitPrefix()).isTrue();
        assertThat(config.producerProperties()).containsEntry("delivery.timeout.ms", 30_000L)
                .containsEntry("bootstrap.servers", "b:9092").containsEntry("security.protocol", "SASL_SSL");
        String described = KafkaTransportConfig.DESCRIPTOR.describe(config);
        assertThat(described).contains("sasl-jaas-config=****", "mode=IDEMPOTENT", "delivery-timeout=30s")
                .doesNotContain(SECRET);
        assertThat(config.toString()).doesNotContain(SECRET);
    }

    @Test
    void anUnknownNameOrABadValueFailsNamingTheSettingAndChangesNothing() {
        KafkaTransport.Builder b = builder();
        assertThatThrownBy(() -> b.settings(Map.of("close-timeout", "1s", "no-such", "1")))
                .isInstanceOf(InvalidConfigurationException.class).hasMessageContaining("no-such")
                .hasMessageContaining("txoutbox.kafka");
        assertThatThrownBy(() -> b.settings(Map.of("close-timeout", "soon")))
                .isInstanceOf(InvalidConfigurationException.class)
                .hasMessageContaining("txoutbox.kafka.close-timeout");
        assertThatThrownBy(() -> b.settings(Map.of("mode", "eventually")))
                .isInstanceOf(InvalidConfigurationException.class).hasMessageContaining("txoutbox.kafka.mode");
        assertThat(b.config().closeTimeout()).isEqualTo(KafkaTransport.DEFAULT_CLOSE_TIMEOUT);
    }

    @Test
    void aBadValueFromTheBuilderNamesTheProperty() {
        assertThatThrownBy(() -> builder().closeTimeout(java.time.Duration.ofSeconds(-1)).build())
                .isInstanceOf(InvalidConfigurationException.class).hasMessageContaining("kafka.closeTimeout")
                .hasMessageContaining("txoutbox.kafka.close-timeout");
        assertThatThrownBy(() -> builder().mode(null).build())
                .isInstanceOf(InvalidConfigurationException.class).hasMessageContaining("kafka.mode must not be null")
                .hasMessageContaining("txoutbox.kafka.mode");
    }
}
