package io.txoutbox.testing.history;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Function;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Reads a whole topic from offset 0 with {@code isolation.level=read_committed} and without a consumer group
 * (all partitions assigned, nothing committed), and turns every record into a {@link Delivery}.
 *
 * <p>It stops when drained: every partition's position has reached its end offset (for a read_committed consumer
 * the last stable offset) and the end offsets stayed the same for a quiet period, and — if set — at least
 * {@link Builder#expectedEvents expectedEvents} distinct event ids have arrived. At the deadline it stops with what
 * it has (the checker then reports the missing events as lost) and logs a warning.
 *
 * <pre>{@code
 * List<Delivery> deliveries = Verifier.builder(bootstrap, "orders").expectedEvents(ledger.size()).build().readAll();
 * HistoryReport report = HistoryChecker.check(ledger, deliveries);
 * }</pre>
 */
public final class Verifier {

    public static final String DEFAULT_EVENT_ID_HEADER = "event_id";
    public static final Duration DEFAULT_DEADLINE = Duration.ofSeconds(60);
    public static final Duration DEFAULT_QUIET_PERIOD = Duration.ofMillis(300);

    private static final Logger log = LoggerFactory.getLogger(Verifier.class);

    private final String bootstrapServers;
    private final String topic;
    private final Function<ConsumerRecord<byte[], byte[]>, UUID> eventIdExtractor;
    private final Duration deadline;
    private final Duration quietPeriod;
    private final long expectedEvents;
    private final Map<String, Object> consumerProperties;

    private Verifier(Builder builder) {
        this.bootstrapServers = builder.bootstrapServers;
        this.topic = builder.topic;
        this.eventIdExtractor = builder.eventIdExtractor;
        this.deadline = builder.deadline;
        this.quietPeriod = builder.quietPeriod;
        this.expectedEvents = builder.expectedEvents;
        this.consumerProperties = Map.copyOf(builder.consumerProperties);
    }

    public static Builder builder(String bootstrapServers, String topic) {
        return new Builder(bootstrapServers, topic);
    }

    /**
     * The event id in header {@code header} as a UTF-8 UUID string; {@code null} if the header is missing or not a
     * UUID.
     */
    public static UUID eventIdFromHeader(ConsumerRecord<?, ?> record, String header) {
        Header last = record.headers().lastHeader(header);
        if (last == null || last.value() == null) {
            return null;
        }
        try {
            return UUID.fromString(new String(last.value(), StandardCharsets.UTF_8));
        } catch (IllegalArgumentException e) {
            return null;
        }
    }

    /** Reads the topic until drained (or the deadline); deliveries in (partition, offset) order. */
    public List<Delivery> readAll() {
        long deadlineNanos = System.nanoTime() + deadline.toNanos();
        List<Delivery> deliveries = new ArrayList<>();
        Set<UUID> distinct = new HashSet<>();
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(consumerConfig())) {
            List<TopicPartition> partitions = partitions(consumer, deadlineNanos);
            consumer.assign(partitions);
            consumer.seekToBeginning(partitions);

            Map<TopicPartition, Long> stableEnd = null;
            long stableSince = 0;
            while (true) {
                long left = deadlineNanos - System.nanoTime();
                if (left <= 0) {
                    log.warn("verifier: topic {} not drained before the deadline {}: {} records, {} distinct events"
                                    + " (expected {})", topic, deadline, deliveries.size(), distinct.size(),
                            expectedEvents < 0 ? "any" : expectedEvents);
                    break;
                }
                ConsumerRecords<byte[], byte[]> records =
                        consumer.poll(Duration.ofNanos(Math.min(left, quietPeriod.toNanos())));
                for (ConsumerRecord<byte[], byte[]> record : records) {
                    Delivery delivery = toDelivery(record);
                    deliveries.add(delivery);
                    if (delivery.eventId() != null) {
                        distinct.add(delivery.eventId());
                    }
                }
                if (!records.isEmpty()) {
                    stableEnd = null;
                    continue;
                }
                Map<TopicPartition, Long> end = consumer.endOffsets(partitions,
                        Duration.ofNanos(Math.max(1, deadlineNanos - System.nanoTime())));
                boolean reached = true;
                for (TopicPartition partition : partitions) {
                    reached &= consumer.position(partition) >= end.get(partition);
                }
                boolean enough = expectedEvents < 0 || distinct.size() >= expectedEvents;
                if (!reached || !enough) {
                    stableEnd = null;
                    continue;
                }
                long now = System.nanoTime();
                if (!end.equals(stableEnd)) {
                    stableEnd = new HashMap<>(end);
                    stableSince = now;
                } else if (now - stableSince >= quietPeriod.toNanos()) {
                    break;
                }
            }
        }
        deliveries.sort(Comparator.comparingInt(Delivery::partition).thenComparingLong(Delivery::offset));
        log.info("verifier: read {} records ({} distinct events) from topic {}", deliveries.size(), distinct.size(),
                topic);
        return deliveries;
    }

    private Delivery toDelivery(ConsumerRecord<byte[], byte[]> record) {
        UUID eventId;
        try {
            eventId = eventIdExtractor.apply(record);
        } catch (RuntimeException e) {
            eventId = null;
        }
        String key = record.key() == null ? null : new String(record.key(), StandardCharsets.UTF_8);
        return new Delivery(eventId, key, record.partition(), record.offset(), record.timestamp());
    }

    private List<TopicPartition> partitions(KafkaConsumer<byte[], byte[]> consumer, long deadlineNanos) {
        while (true) {
            long left = deadlineNanos - System.nanoTime();
            List<PartitionInfo> infos = consumer.partitionsFor(topic, Duration.ofNanos(Math.max(1, left)));
            if (infos != null && !infos.isEmpty()) {
                List<TopicPartition> partitions = new ArrayList<>();
                for (PartitionInfo info : infos) {
                    partitions.add(new TopicPartition(topic, info.partition()));
                }
                partitions.sort(Comparator.comparingInt(TopicPartition::partition));
                return partitions;
            }
            if (System.nanoTime() - deadlineNanos >= 0) {
                throw new IllegalStateException("verifier: topic " + topic + " has no partitions (does it exist?)"
                        + " after " + deadline);
            }
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(50));
        }
    }

    private Map<String, Object> consumerConfig() {
        Map<String, Object> config = new HashMap<>();
        config.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers);
        config.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        config.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        config.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        config.put(ConsumerConfig.CLIENT_ID_CONFIG, "txoutbox-verifier-" + topic);
        config.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 5_000);
        config.put(ConsumerConfig.ALLOW_AUTO_CREATE_TOPICS_CONFIG, false);
        config.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class);
        config.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class);
        config.putAll(consumerProperties);
        return config;
    }

    /** Builds a {@link Verifier}. */
    public static final class Builder {
        private final String bootstrapServers;
        private final String topic;
        private Function<ConsumerRecord<byte[], byte[]>, UUID> eventIdExtractor =
                record -> eventIdFromHeader(record, DEFAULT_EVENT_ID_HEADER);
        private Duration deadline = DEFAULT_DEADLINE;
        private Duration quietPeriod = DEFAULT_QUIET_PERIOD;
        private long expectedEvents = -1;
        private final Map<String, Object> consumerProperties = new HashMap<>();

        private Builder(String bootstrapServers, String topic) {
            this.bootstrapServers = Objects.requireNonNull(bootstrapServers, "verifier.bootstrapServers");
            this.topic = Objects.requireNonNull(topic, "verifier.topic");
        }

        /** Reads the event id from this header (UTF-8 UUID string) instead of {@code event_id}. */
        public Builder eventIdHeader(String header) {
            Objects.requireNonNull(header, "verifier.eventIdHeader");
            this.eventIdExtractor = record -> eventIdFromHeader(record, header);
            return this;
        }

        /** How to find a record's event id; return (or throw for) nothing to count the record as unidentified. */
        public Builder eventIdExtractor(Function<ConsumerRecord<byte[], byte[]>, UUID> extractor) {
            this.eventIdExtractor = Objects.requireNonNull(extractor, "verifier.eventIdExtractor");
            return this;
        }

        /** Give up after this long and return what arrived. */
        public Builder deadline(Duration deadline) {
            this.deadline = positive("deadline", deadline);
            return this;
        }

        /** How long the end offsets must stay put (with everything read) to count as drained. */
        public Builder quietPeriod(Duration quietPeriod) {
            this.quietPeriod = positive("quietPeriod", quietPeriod);
            return this;
        }

        /** Keep reading (up to the deadline) until this many distinct event ids arrived, then drain. */
        public Builder expectedEvents(long expected) {
            if (expected < 0) {
                throw new IllegalArgumentException("verifier.expectedEvents must be >= 0, was " + expected);
            }
            this.expectedEvents = expected;
            return this;
        }

        /** Extra consumer properties (e.g. security); they override the verifier's own. */
        public Builder consumerProperty(String name, Object value) {
            consumerProperties.put(name, value);
            return this;
        }

        public Verifier build() {
            return new Verifier(this);
        }

        private static Duration positive(String property, Duration value) {
            if (value == null || value.isNegative() || value.isZero()) {
                throw new IllegalArgumentException("verifier." + property + " must be > 0, was " + value);
            }
            return value;
        }
    }
}
