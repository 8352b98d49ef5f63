package io.txoutbox.kafka.internal;

import io.txoutbox.kafka.KafkaTransport;
import io.txoutbox.kafka.KafkaTransportConfig;
import io.txoutbox.spi.TransportLane;
import java.util.Map;
import java.util.TreeMap;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.producer.ProducerConfig;

/**
 * What the transport's lanes derive from a validated {@link KafkaTransportConfig}: each lane's producer properties
 * and {@code transactional.id}, the admin client's subset, and the limits a batch is planned against. Kept here, not
 * on the public record, so the record shows settings only; public because {@link KafkaTransport} builds it.
 */
public final class ProducerSettings {

    /** Kafka's own defaults for the two limits a record is checked against before it is sent. */
    public static final int KAFKA_DEFAULT_MAX_REQUEST_SIZE = 1_048_576;
    public static final long KAFKA_DEFAULT_BUFFER_MEMORY = 33_554_432L;
    /** The most bytes one partition may receive in one batch in Mode.IDEMPOTENT; see {@link #partitionShareBytes}. */
    public static final long MAX_PARTITION_SHARE_BYTES = 262_144;

    private final KafkaTransportConfig config;
    private final Map<String, Object> producerProperties;

    public ProducerSettings(KafkaTransportConfig config) {
        this.config = config;
        this.producerProperties = config.producerProperties();
    }

    public KafkaTransport.Mode mode() {
        return config.mode();
    }

    boolean idempotent() {
        return config.mode() == KafkaTransport.Mode.IDEMPOTENT;
    }

    /** The effective producer properties shared by every lane (no transactional.id, no lane client id). */
    public Map<String, Object> sharedProperties() {
        return producerProperties;
    }

    /** Producer properties for one lane; the serializers are passed to the producer's constructor. */
    public Map<String, Object> producerProperties(String lane) {
        return producerProperties(lane, transactionalId(lane));
    }

    /** Producer properties for one lane with its {@code transactional.id} (TRANSACTIONAL mode only). */
    public Map<String, Object> producerProperties(String lane, String transactionalId) {
        Map<String, Object> props = new TreeMap<>(producerProperties);
        if (config.mode() == KafkaTransport.Mode.TRANSACTIONAL) {
            props.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, transactionalId);
        }
        Object clientId = props.get(ProducerConfig.CLIENT_ID_CONFIG);
        props.put(ProducerConfig.CLIENT_ID_CONFIG, (clientId == null ? "txoutbox-kafka" : clientId) + "-" + lane);
        return props;
    }

    /** The subset an {@code Admin} client understands (bootstrap, security), for the topic-existence check. */
    public Map<String, Object> adminProperties() {
        Map<String, Object> props = new TreeMap<>();
        producerProperties.forEach((k, v) -> {
            if (AdminClientConfig.configNames().contains(k) && !k.equals(AdminClientConfig.CLIENT_ID_CONFIG)) {
                props.put(k, v);
            }
        });
        props.put(AdminClientConfig.CLIENT_ID_CONFIG, "txoutbox-kafka-admin");
        props.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, String.valueOf(requestTimeoutMs()));
        props.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, String.valueOf(requestTimeoutMs()));
        return props;
    }

    /** The id of a lane sent by name only ({@link KafkaTransport#send(String, java.util.List)}): prefix + name. */
    public String transactionalId(String lane) {
        return config.transactionalIdPrefix() + lane;
    }

    /**
     * The id of a relay lane: {@code txoutbox-<installation id>-<lane index>} ({@code -dlt} appended for its dead
     * letters), the same for every instance of one outbox and independent of the relay's name; with an explicit
     * prefix, {@code prefix + lane name} as before.
     */
    public String transactionalId(TransportLane lane) {
        return config.explicitPrefix() ? config.transactionalIdPrefix() + lane.name()
                : config.transactionalIdPrefix() + lane.fencingKey();
    }

    /**
     * Mode.IDEMPOTENT: the most bytes (uncompressed estimate) one partition may receive in one batch, so that the
     * producer keeps them in a single record batch, which the broker appends or rejects as a whole: half the batch
     * size (the producer's own fullness estimate may run over the raw size), and at most
     * {@value #MAX_PARTITION_SHARE_BYTES}, so that a topic whose {@code max.message.bytes} was lowered to that still
     * takes the record batch whole instead of making the producer split it.
     */
    public long partitionShareBytes() {
        return Math.min(MAX_PARTITION_SHARE_BYTES, Math.min(batchSize(), maxRequestSize()) / 2);
    }

    public int maxRequestSize() {
        return (int) longValue(ProducerConfig.MAX_REQUEST_SIZE_CONFIG, KAFKA_DEFAULT_MAX_REQUEST_SIZE);
    }

    public long bufferMemory() {
        return longValue(ProducerConfig.BUFFER_MEMORY_CONFIG, KAFKA_DEFAULT_BUFFER_MEMORY);
    }

    public long batchSize() {
        return longValue(ProducerConfig.BATCH_SIZE_CONFIG, KafkaTransport.DEFAULT_BATCH_SIZE);
    }

    public long requestTimeoutMs() {
        return longValue(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, KafkaTransport.DEFAULT_REQUEST_TIMEOUT_MS);
    }

    private long longValue(String key, long fallback) {
        Object value = producerProperties.get(key);
        return value == null ? fallback : ClientProperties.number(key, value);
    }
}
