package io.txoutbox.kafka;

import io.txoutbox.Inbox;
import io.txoutbox.InboxEvent;
import io.txoutbox.InboxHandler;
import io.txoutbox.InvalidConfigurationException;
import io.txoutbox.OutboxException;
import io.txoutbox.OutboxGrants;
import io.txoutbox.OutboxSchema;
import io.txoutbox.RetryPolicy;
import io.txoutbox.internal.inbox.HandlerFailures;
import io.txoutbox.internal.Privileges;
import io.txoutbox.internal.config.Checks;
import io.txoutbox.internal.config.RetryDraft;
import io.txoutbox.kafka.internal.ClientProperties;
import io.txoutbox.kafka.internal.ConsumerCounters;
import io.txoutbox.kafka.internal.ConsumerLoop;
import io.txoutbox.kafka.internal.RecordEventIds;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Properties;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Function;
import java.util.function.Predicate;
import javax.sql.DataSource;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A Kafka consumer loop (kafka-clients) that feeds the inbox, in one of two modes:
 * <ul>
 *   <li>{@link Builder#storeInInbox() store}: each poll's records are written to {@code inbox_event} in one database
 *   transaction ({@link Inbox#receive}); an {@code InboxWorker} processes them. Fast, and a slow or failing handler
 *   never holds up the partition. Keys and header values are stored byte for byte ({@code InboxEvent.keyBytes()}).
 *   A record that cannot be stored as it is (an unreadable event id or version header, a row the database refuses
 *   for its own values) never stalls its partition: it goes to the dead-letter topic when one is configured, else it
 *   is kept as a {@code DEAD} inbox row with the reason in {@code last_error}; the other records of the poll are
 *   stored (the batch insert runs under a savepoint, and only when it fails are the rows inserted one by one).</li>
 *   <li>{@link Builder#handler(InboxHandler) handle}: each record's handler runs through {@link Inbox#once} (dedupe
 *   row and effects in one transaction; optional version check), all records of a poll in one database transaction
 *   with a savepoint per record. A transient failure pauses its partition and retries the record with backoff; a
 *   permanent failure, or the last attempt, sends the record to the dead-letter topic with the reason, the original
 *   topic/partition/offset and the exception class in headers ({@code KafkaHeaders.DLT_*}), and the partition moves
 *   on.</li>
 * </ul>
 * Either way offsets are committed (synchronously) only after the database transaction committed, so a crash or a
 * rebalance at any point redelivers records whose effects may already be committed — and the inbox's primary key or
 * {@code processed_event} drops them. One thread polls, processes and commits, so a partition revoked in a rebalance
 * is never in the middle of a batch. Reads {@code read_committed} by default (the relay writes in transactions).
 *
 * <pre>{@code
 * KafkaInboxConsumer consumer = KafkaInboxConsumer.builder()
 *         .bootstrapServers("kafka:9092").groupId("billing").topics("orders")
 *         .dataSource(dataSource)
 *         .handler((connection, event) -> charge(connection, event))
 *         .deadLetterTopic("orders.billing.dlt")
 *         .build().start();
 * }</pre>
 */
public final class KafkaInboxConsumer implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(KafkaInboxConsumer.class);
    /** {@link KafkaInboxConsumerConfig#DEFAULT_POLL_TIMEOUT}. */
    public static final Duration DEFAULT_POLL_TIMEOUT = KafkaInboxConsumerConfig.DEFAULT_POLL_TIMEOUT;
    /** {@link KafkaInboxConsumerConfig#DEFAULT_RETRY}. */
    public static final RetryPolicy DEFAULT_RETRY = KafkaInboxConsumerConfig.DEFAULT_RETRY;

    /**
     * Counters since start.
     *
     * @param afterStoreFailures store mode: times the {@link Builder#afterStore afterStore} callback threw (logged;
     *     the batch stays done)
     */
    public record Stats(long polled, long stored, long applied, long duplicates, long stale, long retries,
            long deadLettered, long batches, long loopErrors, long commitFailures, long afterStoreFailures) {
    }

    private final KafkaInboxConsumerConfig config;
    private final DataSource dataSource;
    private final boolean handleMode;
    private final ConsumerCounters counters = new ConsumerCounters();
    private final ConsumerLoop loop;
    private final AtomicBoolean started = new AtomicBoolean();
    private final AtomicBoolean closed = new AtomicBoolean();

    private KafkaInboxConsumer(KafkaInboxConsumerConfig config, Builder b) {
        this.config = config;
        this.dataSource = b.dataSource;
        this.handleMode = b.handler != null;
        this.loop = handleMode
                ? ConsumerLoop.handle(config, b.dataSource, b.eventIds, b.handler, b.permanentFailure, counters)
                : ConsumerLoop.store(config, b.dataSource, b.eventIds, b.afterStore, counters);
    }

    public static Builder builder() {
        return new Builder();
    }

    /**
     * The record's event id (the dedupe key) from the {@value KafkaHeaders#EVENT_ID} header, which the txoutbox relay
     * writes; a record without it (or with a non-UUID) fails permanently. For {@link Builder#eventIds}.
     */
    public static Function<ConsumerRecord<byte[], byte[]>, UUID> eventIdFromHeader() {
        return RecordEventIds::fromHeader;
    }

    /**
     * The {@value KafkaHeaders#EVENT_ID} header, or, when there is none, a name-based UUID of the record's topic,
     * partition and offset (the default of {@link Builder#eventIds}). The derived id is the same on every redelivery
     * of that Kafka record, so redeliveries are deduped; a foreign producer that sends the same message twice makes
     * two records and two ids — derive from a business key of the payload instead when that matters.
     */
    public static Function<ConsumerRecord<byte[], byte[]>, UUID> eventIdFromHeaderOrCoordinates() {
        return RecordEventIds::fromHeaderOrCoordinates;
    }

    /**
     * The event id of a record of any key and value type (a Spring {@code @KafkaListener}'s
     * {@code ConsumerRecord<String, String>}): its {@value KafkaHeaders#EVENT_ID} header, or, without one, the
     * name-based UUID of its coordinates ({@link #eventIdFromHeaderOrCoordinates()}).
     */
    public static UUID eventIdOf(ConsumerRecord<?, ?> r) {
        return RecordEventIds.fromHeaderOrCoordinates(r);
    }

    /**
     * A record of any key and value type (a Spring {@code @KafkaListener}'s {@code ConsumerRecord<String, String>})
     * as the message {@link Inbox#receive} stores, mapped as this consumer's store mode maps it: id from
     * {@link #eventIdOf}, event type and aggregate from their headers, key and header values byte for byte,
     * {@code byte[]} or UTF-8 of a {@code String}.
     */
    public static io.txoutbox.InboxMessage inboxMessageOf(ConsumerRecord<?, ?> r) {
        return io.txoutbox.kafka.internal.InboxMessages.of(r);
    }

    /** A name-based (version 3) UUID of {@code topic/partition/offset}. */
    public static UUID eventIdFromCoordinates(ConsumerRecord<?, ?> r) {
        return RecordEventIds.fromCoordinates(r);
    }

    public KafkaInboxConsumer start() {
        if (closed.get()) {
            throw new OutboxException("Kafka inbox consumer " + config.name() + " is closed; build a new one");
        }
        if (!started.get()) {
            // what storing (or, in handle mode, the dedupe) needs; the handler's own statements are the application's
            Privileges.requireAtStart(dataSource, config.schema(), "Kafka inbox consumer '" + config.name() + "'", log,
                    List.of(handleMode ? OutboxGrants.Component.DEDUPE : OutboxGrants.Component.INBOX_RECEIVER));
        }
        if (started.compareAndSet(false, true)) {
            log.info("txoutbox-kafka-inbox {}: starting in {} mode on {}: {}; client properties {}", config.name(),
                    loop.mode(), config.schema(),
                    KafkaInboxConsumerConfig.DESCRIPTOR.describe(config), ClientProperties.describe(config.properties()));
            loop.start();
        }
        return this;
    }

    public Stats stats() {
        ConsumerCounters c = counters;
        return new Stats(c.polled(), c.stored(), c.applied(), c.duplicates(), c.stale(), c.retries(),
                c.deadLettered(), c.batches(), c.loopErrors(), c.commitFailures(), c.afterStoreFailures());
    }

    /** Stops polling after the current batch (bounded wait), closes the Kafka clients. Idempotent. */
    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        loop.stop(started.get());
        log.info("txoutbox-kafka-inbox {}: closed; {}", config.name(), stats());
    }

    // ---- builder ----------------------------------------------------------------------------------------------

    /** Validating builder; {@link #build()} fails fast and names the property at fault. */
    public static final class Builder {
        private final Map<String, Object> properties = new HashMap<>();
        private List<String> topics = List.of();
        private String groupId;
        private String consumerName;
        private String name = KafkaInboxConsumerConfig.DEFAULT_NAME;
        private DataSource dataSource;
        private OutboxSchema schema = OutboxSchema.defaults();
        private InboxHandler handler;
        private boolean store;
        private Runnable afterStore;
        private Function<ConsumerRecord<byte[], byte[]>, UUID> eventIds = eventIdFromHeaderOrCoordinates();
        private boolean checkVersions = KafkaInboxConsumerConfig.DEFAULT_CHECK_VERSIONS;
        private final RetryDraft retry = new RetryDraft("kafkaInbox", KafkaInboxConsumerConfig.DEFAULT_RETRY);
        private Predicate<Throwable> permanentFailure = HandlerFailures::isPermanent;
        private String deadLetterTopic;
        private Duration pollTimeout = KafkaInboxConsumerConfig.DEFAULT_POLL_TIMEOUT;

        private Builder() {
        }

        public Builder bootstrapServers(String servers) {
            return property(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, servers);
        }

        /** Any consumer property (TLS, SASL, max.poll.records, …); also given to the dead-letter producer. */
        public Builder property(String key, Object value) {
            properties.put(Objects.requireNonNull(key, "key"), value);
            return this;
        }

        /** Consumer properties in bulk (e.g. the TLS or SASL settings), as {@link #property} one by one. */
        public Builder properties(Map<String, ?> properties) {
            ClientProperties.copy(properties, this::property);
            return this;
        }

        public Builder properties(Properties properties) {
            ClientProperties.copy(properties, this::property);
            return this;
        }

        public Builder groupId(String groupId) {
            this.groupId = groupId;
            return this;
        }

        public Builder topics(String... topics) {
            this.topics = List.of(topics);
            return this;
        }

        /** The inbox consumer name (dedupe scope), default the group id; the same setting as InboxWorker's. */
        public Builder consumer(String consumer) {
            this.consumerName = consumer;
            return this;
        }

        /** @deprecated the same setting as {@link #consumer(String)}, under InboxWorker's name: use that. */
        @Deprecated(forRemoval = true)
        public Builder consumerName(String consumerName) {
            return consumer(consumerName);
        }

        /** Names the loop in logs and its thread. */
        public Builder name(String name) {
            this.name = name;
            return this;
        }

        public Builder dataSource(DataSource dataSource) {
            this.dataSource = dataSource;
            return this;
        }

        /** Where the inbox tables are, default {@link OutboxSchema#defaults()}; {@code null} is refused here. */
        public Builder schema(OutboxSchema schema) {
            this.schema = Checks.schema("kafkaInbox", schema);
            return this;
        }

        /** Store mode: write records to {@code inbox_event} for an {@code InboxWorker}. */
        public Builder storeInInbox() {
            this.store = true;
            return this;
        }

        /** Store mode: called after each stored batch committed, e.g. {@code worker::nudge}. */
        public Builder afterStore(Runnable afterStore) {
            this.afterStore = afterStore;
            return this;
        }

        /** Handle mode: run this handler once per event ({@link Inbox#once}). Needs a dead-letter topic. */
        public Builder handler(InboxHandler handler) {
            this.handler = handler;
            return this;
        }

        /**
         * How to get a record's event id; default {@link KafkaInboxConsumer#eventIdFromHeaderOrCoordinates()}, or
         * {@link KafkaInboxConsumer#eventIdFromHeader()} to refuse records without the header.
         */
        public Builder eventIds(Function<ConsumerRecord<byte[], byte[]>, UUID> eventIds) {
            this.eventIds = eventIds;
            return this;
        }

        /** Handle mode: skip (and count) records whose aggregate version is not above the applied one. */
        public Builder checkVersions(boolean checkVersions) {
            this.checkVersions = checkVersions;
            return this;
        }

        /** Handle mode: attempts and backoff of a record's transient failures (its partition pauses meanwhile). */
        public Builder retry(RetryPolicy retry) {
            this.retry.set(retry);
            return this;
        }

        RetryDraft retryDraft() {
            return retry;
        }

        /**
         * Applies settings by their names in {@link KafkaInboxConsumerConfig#DESCRIPTOR} ({@code "group-id"} or
         * {@code "txoutbox.kafka-inbox.group-id"}), each value its text form ({@code "orders,payments"},
         * {@code "250ms"}) or typed; an unknown name or an unreadable value fails and changes nothing.
         */
        public Builder settings(Map<String, ?> settings) {
            return KafkaInboxConsumerConfig.DESCRIPTOR.apply(this, settings);
        }

        public Builder permanentFailure(Predicate<Throwable> permanentFailure) {
            this.permanentFailure = permanentFailure;
            return this;
        }

        public Builder deadLetterTopic(String deadLetterTopic) {
            this.deadLetterTopic = deadLetterTopic;
            return this;
        }

        public Builder pollTimeout(Duration pollTimeout) {
            this.pollTimeout = pollTimeout;
            return this;
        }

        /** The validated configuration this builder holds now, without the objects and the mode. */
        public KafkaInboxConsumerConfig config() {
            return new KafkaInboxConsumerConfig(schema, groupId, topics, consumerName, name, deadLetterTopic,
                    pollTimeout, retry.toPolicy(), checkVersions, properties);
        }

        public KafkaInboxConsumer build() {
            KafkaInboxConsumerConfig config = config();
            if (dataSource == null) {
                throw new InvalidConfigurationException("kafkaInbox.dataSource is required");
            }
            if (eventIds == null || permanentFailure == null) {
                throw new InvalidConfigurationException("kafkaInbox." + (eventIds == null ? "eventIds"
                        : "permanentFailure") + " must not be null; leave it unset for the default");
            }
            if (store == (handler != null)) {
                throw new InvalidConfigurationException("kafkaInbox needs exactly one mode: storeInInbox() or "
                        + "handler(...)");
            }
            if (handler != null && config.deadLetterTopic() == null) {
                throw Checks.invalid("kafkaInbox.deadLetterTopic", "is required with handler(...): records that "
                        + "fail permanently or run out of attempts go there");
            }
            return new KafkaInboxConsumer(config, this);
        }
    }
}
