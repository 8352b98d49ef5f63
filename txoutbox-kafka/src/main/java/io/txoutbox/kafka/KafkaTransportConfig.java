package io.txoutbox.kafka;

import static io.txoutbox.kafka.KafkaTransport.DEFAULT_ACKS;
import static io.txoutbox.kafka.KafkaTransport.DEFAULT_BATCH_SIZE;
import static io.txoutbox.kafka.KafkaTransport.DEFAULT_COMPRESSION_TYPE;
import static io.txoutbox.kafka.KafkaTransport.DEFAULT_DELIVERY_TIMEOUT_MS;
import static io.txoutbox.kafka.KafkaTransport.DEFAULT_LINGER_MS;
import static io.txoutbox.kafka.KafkaTransport.DEFAULT_MAX_BLOCK_MS;
import static io.txoutbox.kafka.KafkaTransport.DEFAULT_REQUEST_TIMEOUT_MS;
import static io.txoutbox.kafka.KafkaTransport.DEFAULT_TRANSACTION_TIMEOUT_MS;
import static io.txoutbox.kafka.KafkaTransport.IDEMPOTENT_BATCH_SIZE;
import static io.txoutbox.kafka.KafkaTransport.IDEMPOTENT_LINGER_MS;
import static io.txoutbox.kafka.KafkaTransport.MIN_IDEMPOTENT_LINGER_MS;
import static io.txoutbox.kafka.KafkaTransport.TRANSACTIONAL_RETRY_BACKOFF_MAX_MS;

import io.txoutbox.ConfigDescriptor;
import io.txoutbox.InvalidConfigurationException;
import io.txoutbox.internal.config.Checks;
import io.txoutbox.internal.config.DescriptorBuilder;
import io.txoutbox.kafka.internal.ClientProperties;
import io.txoutbox.kafka.internal.PartitionBudget;
import io.txoutbox.kafka.internal.ProducerSettings;
import java.time.Duration;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import org.apache.kafka.clients.producer.ProducerConfig;

/**
 * The validated, effective producer configuration of a {@link KafkaTransport}: user properties over the defaults,
 * with every override that would break the outbox's guarantees rejected.
 */
public record KafkaTransportConfig(KafkaTransport.Mode mode, String transactionalIdPrefix, boolean explicitPrefix,
        Duration closeTimeout, Map<String, Object> producerProperties) {

    /**
     * The settings under {@code txoutbox.kafka}. Arbitrary producer properties stay builder calls
     * ({@code property(key, value)}, {@code properties(map)}): their names are Kafka's own dotted names, not settings
     * of this library, and their secrets are recognised per key ({@link ClientProperties#isSecret}); a starter binds them as a map.
     * The Kafka properties listed here are views of the producer properties ({@code max.block.ms}, ...).
     */
    public static final ConfigDescriptor<KafkaTransport.Builder, KafkaTransportConfig> DESCRIPTOR =
            ClientProperties.addSecuritySettings(
                    DescriptorBuilder.<KafkaTransport.Builder, KafkaTransportConfig>define("kafka")
                    .add("bootstrapServers", String.class, null, "",
                            "Kafka's bootstrap.servers: comma-separated host:port list (required)",
                            KafkaTransport.Builder::bootstrapServers, c -> c.text(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG))
                    .add("mode", KafkaTransport.Mode.class, KafkaTransport.Mode.TRANSACTIONAL, "",
                            "TRANSACTIONAL (one Kafka transaction per batch) or IDEMPOTENT",
                            KafkaTransport.Builder::mode, KafkaTransportConfig::mode)
                    .add("transactionalIdPrefix", String.class, KafkaTransport.DEFAULT_TRANSACTIONAL_ID_PREFIX, "",
                            "set: each lane's transactional.id is prefix + lane name; unset: prefix + installation id"
                                    + " and lane index",
                            KafkaTransport.Builder::transactionalIdPrefix, KafkaTransportConfig::transactionalIdPrefix)
                    .add("closeTimeout", Duration.class, KafkaTransport.DEFAULT_CLOSE_TIMEOUT, "",
                            "how long close() waits for running batches and producers in total",
                            KafkaTransport.Builder::closeTimeout, KafkaTransportConfig::closeTimeout)
                    .add("maxBlock", Duration.class, Duration.ofMillis(DEFAULT_MAX_BLOCK_MS), "",
                            "Kafka's max.block.ms: how long a send waits for metadata or buffer space",
                            (b, v) -> b.property(ProducerConfig.MAX_BLOCK_MS_CONFIG, millis(v)),
                            c -> c.duration(ProducerConfig.MAX_BLOCK_MS_CONFIG))
                    .add("requestTimeout", Duration.class, Duration.ofMillis(DEFAULT_REQUEST_TIMEOUT_MS), "",
                            "Kafka's request.timeout.ms: how long the producer waits for a broker's answer",
                            (b, v) -> b.property(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, millis(v)),
                            c -> c.duration(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG))
                    .add("deliveryTimeout", Duration.class, Duration.ofMillis(DEFAULT_DELIVERY_TIMEOUT_MS), "",
                            "Kafka's delivery.timeout.ms: the most a record is retried before it fails",
                            (b, v) -> b.property(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, millis(v)),
                            c -> c.duration(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG))
                    .add("transactionTimeout", Duration.class, Duration.ofMillis(DEFAULT_TRANSACTION_TIMEOUT_MS), "",
                            "Kafka's transaction.timeout.ms (TRANSACTIONAL mode): when the broker aborts a transaction",
                            (b, v) -> b.property(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, millis(v)),
                            c -> c.duration(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG)),
                    KafkaTransport.Builder::property, KafkaTransportConfig::text)
                    .build();

    /**
     * Validates and completes the configuration: the user's producer properties over the defaults, every override
     * that would break the outbox's guarantees rejected.
     */
    public KafkaTransportConfig {
        Checks.notNull("kafka.mode", mode);
        Checks.notNull("kafka.transactionalIdPrefix", transactionalIdPrefix);
        Checks.notNegative("kafka.closeTimeout", closeTimeout);
        Checks.notNull("kafka.producerProperties", producerProperties);
        producerProperties = Map.copyOf(effective(producerProperties, mode));
    }

    static KafkaTransportConfig of(Map<String, Object> userProperties, String transactionalIdPrefix,
            Duration closeTimeout) {
        return of(userProperties, transactionalIdPrefix, closeTimeout, KafkaTransport.Mode.TRANSACTIONAL);
    }

    static KafkaTransportConfig of(Map<String, Object> userProperties, String transactionalIdPrefix,
            Duration closeTimeout, KafkaTransport.Mode mode) {
        return of(userProperties, transactionalIdPrefix, true, closeTimeout, mode);
    }

    /**
     * {@code explicitPrefix}: the prefix was set by the user, so a lane's {@code transactional.id} is {@code prefix +
     * lane name} (as before the installation id); otherwise it is {@code txoutbox-<installation id>-<lane index>}.
     */
    static KafkaTransportConfig of(Map<String, Object> userProperties, String transactionalIdPrefix,
            boolean explicitPrefix, Duration closeTimeout, KafkaTransport.Mode mode) {
        return new KafkaTransportConfig(mode, transactionalIdPrefix, explicitPrefix, closeTimeout, userProperties);
    }

    private static Map<String, Object> effective(Map<String, Object> userProperties, KafkaTransport.Mode mode) {
        boolean idempotentMode = mode == KafkaTransport.Mode.IDEMPOTENT;
        for (String key : userProperties.keySet()) {
            if (userProperties.get(key) == null) {
                throw invalid("Kafka property '" + key + "' has a null value: leave it out to use the default");
            }
        }
        rejectPresent(userProperties, ProducerConfig.TRANSACTIONAL_ID_CONFIG,
                "KafkaTransport sets it per lane to transactionalIdPrefix + lane; use transactionalIdPrefix(...) "
                        + "to change the prefix");
        rejectPresent(userProperties, ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG,
                "KafkaTransport sends the outbox key as UTF-8 bytes; remove the override");
        rejectPresent(userProperties, ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG,
                "KafkaTransport sends the stored payload bytes unchanged; remove the override");
        if (idempotentMode) {
            rejectPresent(userProperties, ProducerConfig.PARTITIONER_CLASS_CONFIG,
                    "in Mode.IDEMPOTENT KafkaTransport picks each record's partition itself (Kafka's default: "
                            + "murmur2 of the key), because it must know how a batch splits into partitions; use "
                            + "Mode.TRANSACTIONAL for a custom partitioner");
        }

        Map<String, Object> props = new TreeMap<>(userProperties);
        Object bootstrap = props.get(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG);
        if (bootstrap == null || String.valueOf(bootstrap).isBlank()) {
            throw invalid("Kafka property 'bootstrap.servers' is missing: set it with bootstrapServers(\"host:9092\")");
        }
        props.putIfAbsent(ProducerConfig.ACKS_CONFIG, DEFAULT_ACKS);
        props.putIfAbsent(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
        props.putIfAbsent(ProducerConfig.LINGER_MS_CONFIG,
                String.valueOf(idempotentMode ? IDEMPOTENT_LINGER_MS : DEFAULT_LINGER_MS));
        props.putIfAbsent(ProducerConfig.BATCH_SIZE_CONFIG,
                String.valueOf(idempotentMode ? IDEMPOTENT_BATCH_SIZE : DEFAULT_BATCH_SIZE));
        props.putIfAbsent(ProducerConfig.COMPRESSION_TYPE_CONFIG, DEFAULT_COMPRESSION_TYPE);
        props.putIfAbsent(ProducerConfig.MAX_BLOCK_MS_CONFIG, String.valueOf(DEFAULT_MAX_BLOCK_MS));
        props.putIfAbsent(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, String.valueOf(DEFAULT_REQUEST_TIMEOUT_MS));
        props.putIfAbsent(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, String.valueOf(DEFAULT_DELIVERY_TIMEOUT_MS));
        if (!idempotentMode) {
            // one produce request per broker at a time: with more, a transaction's later request for a partition can
            // reach the broker while its first one is refused (CONCURRENT_TRANSACTIONS, the previous transaction's
            // markers not yet written); the broker then rejects the later one (OutOfOrderSequenceException,
            // KAFKA-18202) and the transaction stalls in retries, holding back read_committed consumers
            props.putIfAbsent(ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION,
                    String.valueOf(TRANSACTIONAL_MAX_IN_FLIGHT));
            props.putIfAbsent(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG,
                    String.valueOf(DEFAULT_TRANSACTION_TIMEOUT_MS));
            // with transactions v2 the broker adds a partition to the transaction when the first produce request for
            // it arrives; while the previous transaction's markers are still being written it retries that for
            // add.partitions.to.txn.retry.backoff.max.ms (100 ms) and then refuses the request with
            // CONCURRENT_TRANSACTIONS, which the producer retries after retry.backoff.ms doubled per attempt: with
            // Kafka's cap of 1 s, a batch went out up to 1 s after the markers (FirstRunIT's 2.3 s stall). Kafka's
            // backoff starts at min(retry.backoff.ms, retry.backoff.max.ms), so a higher retry.backoff.ms raises the cap
            if (!props.containsKey(ProducerConfig.RETRY_BACKOFF_MAX_MS_CONFIG)) {
                long retryBackoff = props.containsKey(ProducerConfig.RETRY_BACKOFF_MS_CONFIG)
                        ? number(props, ProducerConfig.RETRY_BACKOFF_MS_CONFIG) : 0;
                props.put(ProducerConfig.RETRY_BACKOFF_MAX_MS_CONFIG,
                        String.valueOf(Math.max(TRANSACTIONAL_RETRY_BACKOFF_MAX_MS, retryBackoff)));
            }
        }

        String acks = text(props, ProducerConfig.ACKS_CONFIG);
        if (!acks.equals("all") && !acks.equals("-1")) {
            throw invalid("Kafka property 'acks' must be 'all' (or -1), was '" + acks + "': with fewer acknowledgements"
                    + " an acknowledged event can be lost when a broker fails; remove the override");
        }
        String idempotence = text(props, ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG);
        if (!idempotence.equals("true")) {
            throw invalid("Kafka property 'enable.idempotence' must be true, was '" + idempotence
                    + "': transactions and per-key order need the idempotent producer; remove the override");
        }
        Object inFlight = props.get(ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION);
        if (inFlight != null) {
            long value = number(ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION, inFlight);
            if (value > 5 || value < 1) {
                throw invalid("Kafka property 'max.in.flight.requests.per.connection' must be between 1 and 5, was "
                        + value + ": above 5 the idempotent producer cannot keep per-partition order; use 5 or less");
            }
        }
        long linger = number(props, ProducerConfig.LINGER_MS_CONFIG);
        long requestTimeout = number(props, ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG);
        long deliveryTimeout = number(props, ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG);
        number(props, ProducerConfig.MAX_BLOCK_MS_CONFIG);
        number(props, ProducerConfig.BATCH_SIZE_CONFIG);
        if (idempotentMode && linger < MIN_IDEMPOTENT_LINGER_MS) {
            throw invalid("Kafka property 'linger.ms' must be >= " + MIN_IDEMPOTENT_LINGER_MS + " in Mode.IDEMPOTENT, "
                    + "was " + linger + ": the transport flushes every batch itself, and a short linger would let "
                    + "the producer send part of a partition's records early, so the two parts could fail apart and "
                    + "break per-key order; remove the override (latency does not depend on it)");
        }
        if (deliveryTimeout < linger + requestTimeout) {
            throw invalid("Kafka property 'delivery.timeout.ms' must be >= linger.ms + request.timeout.ms (" + linger
                    + " + " + requestTimeout + "), was " + deliveryTimeout
                    + ": raise delivery.timeout.ms or lower the other two");
        }
        if (idempotentMode) {
            PartitionBudget.requireRoom(
                    props.containsKey(ProducerConfig.BUFFER_MEMORY_CONFIG)
                            ? number(props, ProducerConfig.BUFFER_MEMORY_CONFIG) : ProducerSettings.KAFKA_DEFAULT_BUFFER_MEMORY,
                    number(props, ProducerConfig.BATCH_SIZE_CONFIG),
                    props.containsKey(ProducerConfig.MAX_REQUEST_SIZE_CONFIG)
                            ? number(props, ProducerConfig.MAX_REQUEST_SIZE_CONFIG) : ProducerSettings.KAFKA_DEFAULT_MAX_REQUEST_SIZE);
        }
        long transactionTimeout = idempotentMode ? Long.MAX_VALUE
                : number(props, ProducerConfig.TRANSACTION_TIMEOUT_CONFIG);
        if (transactionTimeout < deliveryTimeout) {
            throw invalid("Kafka property 'transaction.timeout.ms' must be >= delivery.timeout.ms (" + deliveryTimeout
                    + "), was " + transactionTimeout + ": otherwise the broker may abort a batch's transaction while "
                    + "its records are still being retried; raise transaction.timeout.ms");
        }
        return props;
    }

    /** Mode.TRANSACTIONAL's default {@code max.in.flight.requests.per.connection}; see {@link #of}. */
    static final int TRANSACTIONAL_MAX_IN_FLIGHT = 1;

    /** A producer property as text; {@code null} when unset (a {@code Password} gives its value). */
    private String text(String key) {
        return ClientProperties.text(producerProperties, key);
    }

    /** A producer property in milliseconds as a duration; {@code null} when unset. */
    private Duration duration(String key) {
        Object v = producerProperties.get(key);
        return v == null ? null : Duration.ofMillis(number(key, v));
    }

    private static long millis(Duration d) {
        return Checks.notNull("kafka.duration", d).toMillis();
    }

    /** The effective producer configuration for logs and toString(): sorted, secrets replaced by {@code [hidden]}. */
    String describe() {
        return ClientProperties.describe(producerProperties);
    }

    /** The effective producer configuration, secrets hidden (the record's components are not all settings). */
    @Override
    public String toString() {
        return "KafkaTransportConfig[mode=" + mode + ", transactionalIdPrefix=" + transactionalIdPrefix
                + ", explicitPrefix=" + explicitPrefix + ", closeTimeout=" + closeTimeout + ", producerProperties="
                + describe() + "]";
    }

    private static void rejectPresent(Map<String, Object> props, String key, String why) {
        if (props.containsKey(key)) {
            throw invalid("Kafka property '" + key + "' must not be set: " + why);
        }
    }

    private static String text(Map<String, Object> props, String key) {
        return String.valueOf(props.get(key)).trim().toLowerCase(Locale.ROOT);
    }

    private static long number(Map<String, Object> props, String key) {
        return number(key, props.get(key));
    }

    private static long number(String key, Object value) {
        return ClientProperties.number(key, value);
    }

    private static InvalidConfigurationException invalid(String message) {
        return new InvalidConfigurationException(message);
    }
}
