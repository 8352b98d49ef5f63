package io.txoutbox.kafka;

import io.txoutbox.kafka.internal.ClientProperties;
import io.txoutbox.kafka.internal.LaneProducers;
import io.txoutbox.kafka.internal.LaneWorker;
import io.txoutbox.kafka.internal.ProducerSettings;
import io.txoutbox.spi.OutboxRecord;
import io.txoutbox.spi.SendResult;
import io.txoutbox.spi.Transport;
import io.txoutbox.spi.TransportLane;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Properties;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.RejectedExecutionException;
import java.util.function.Function;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The Kafka {@link Transport}: one Kafka transaction per batch, one transactional producer per relay lane.
 *
 * <pre>{@code
 * Transport kafka = KafkaTransport.builder()
 *         .bootstrapServers("kafka-1:9092,kafka-2:9092")
 *         .property("security.protocol", "SASL_SSL")      // anything else passes through
 *         .build();
 * }</pre>
 *
 * <p><b>How order is kept.</b> A lane's batch is sent by the lane's own thread ({@code txoutbox-kafka-<lane>}) with
 * the lane's producer ({@code transactional.id = txoutbox-<installation id>-<lane index>}, see
 * {@link Builder#transactionalIdPrefix}) inside one transaction. Records that cannot be sent
 * whatever the broker does (over {@code max.request.size}, illegal topic name) are failed {@code PERMANENT} before the
 * transaction, and the later records of their key in the batch {@code COLLATERAL}. If anything fails inside the
 * transaction it is aborted: {@code read_committed} consumers see nothing of the batch, the failing record is
 * reported {@code PERMANENT} or {@code RETRIABLE}, every other record {@code COLLATERAL}. So a batch is visible all or
 * nothing, and a failed record can never be overtaken by a later record of its key. Consumers must read with
 * {@code isolation.level=read_committed}.
 *
 * <p><b>Fencing.</b> The first batch of a lane creates its producer and calls {@code initTransactions()}, which fences
 * any older producer of the same lane, in this process or another (a crashed, paused or partitioned relay). The
 * fenced producer's next batch is reported {@code UNAVAILABLE} with a {@link io.txoutbox.spi.SenderFencedException}
 * cause; nothing of it is committed. A fenced transport creates a new producer on its next send, fencing the other in
 * turn: the relay's lane ownership makes sure only one instance of an outbox keeps sending a lane, and a relay fenced
 * while it still owns its lane (another outbox with the same id: a restored copy, a shared explicit prefix) stops
 * that lane instead of fencing back.
 *
 * <p><b>Timeouts.</b> If the broker cannot be reached, a batch completes {@code UNAVAILABLE} after about
 * {@code max.block.ms}; if a commit or abort times out, or the producer is fenced or hits a fatal error, the producer
 * is closed and replaced, and the batch is reported {@code UNAVAILABLE} (a timed-out commit may still complete, so
 * those records may arrive twice — never out of order, because the next producer of the lane settles the old
 * transaction before it writes).
 *
 * <p>Rejected overrides (they would break the guarantees): {@code acks} other than {@code all}, {@code
 * enable.idempotence=false}, {@code max.in.flight.requests.per.connection > 5}, {@code transactional.id}, key or value
 * serializers, {@code delivery.timeout.ms < linger.ms + request.timeout.ms}, {@code transaction.timeout.ms <
 * delivery.timeout.ms}. The effective configuration is logged once at build time with secrets shown as
 * {@code [hidden]}.
 */
public final class KafkaTransport implements Transport {

    public static final String DEFAULT_ACKS = "all";
    public static final boolean DEFAULT_ENABLE_IDEMPOTENCE = true;
    public static final int DEFAULT_LINGER_MS = 5;
    public static final int DEFAULT_BATCH_SIZE = 131_072;
    public static final String DEFAULT_COMPRESSION_TYPE = "lz4";
    public static final int DEFAULT_MAX_BLOCK_MS = 5_000;
    public static final int DEFAULT_REQUEST_TIMEOUT_MS = 5_000;
    public static final int DEFAULT_DELIVERY_TIMEOUT_MS = 8_000;
    public static final int DEFAULT_TRANSACTION_TIMEOUT_MS = 15_000;
    public static final String DEFAULT_TRANSACTIONAL_ID_PREFIX = "txoutbox-";
    /** {@link Mode#IDEMPOTENT}: {@code linger.ms} default; every batch is flushed at once, so it costs no latency. */
    public static final int IDEMPOTENT_LINGER_MS = 1_000;
    /** {@link Mode#IDEMPOTENT}: the lowest {@code linger.ms} accepted. */
    public static final int MIN_IDEMPOTENT_LINGER_MS = 500;
    /** {@link Mode#IDEMPOTENT}: {@code batch.size} default; a partition's share of a batch is at most half of it. */
    public static final int IDEMPOTENT_BATCH_SIZE = 1_048_576;
    /**
     * {@link Mode#TRANSACTIONAL}: {@code retry.backoff.max.ms} default (Kafka's is 1,000), or {@code retry.backoff.ms}
     * when that is set higher. A lane begins its next transaction as soon as the previous commit returns, often before
     * the broker has written that commit's markers; until it has, the new transaction's first produce request is
     * refused {@code CONCURRENT_TRANSACTIONS} and the producer retries it with its exponential backoff (100 ms
     * doubling). Capped at 100 ms, a batch goes out about 0.1 s after the markers at most instead of up to 1 s; the
     * cost: while a broker or a partition leader is unreachable the producer retries (its metadata requests too)
     * every 0.1 s instead of backing off to 1 s, until {@code delivery.timeout.ms}.
     */
    public static final int TRANSACTIONAL_RETRY_BACKOFF_MAX_MS = 100;

    /**
     * How a batch is made atomic per key. Both keep per-key order of first delivery (see the class comment); they
     * differ in cost and in what consumers see.
     */
    public enum Mode {
        /**
         * One Kafka transaction per batch (the default): all or nothing for {@code read_committed} consumers, zombie
         * producers fenced by {@code transactional.id}. Costs a transaction commit (tens of milliseconds on a busy
         * broker) per batch, and needs {@code read_committed} consumers and transactional-id ACLs.
         */
        TRANSACTIONAL,
        /**
         * The idempotent producer without transactions: each partition's share of a batch travels as one record
         * batch, which the broker appends whole or not at all, and a key's records in a batch all go to one
         * partition. About ten times less latency per batch; consumers may read {@code read_uncommitted}; no
         * fencing, so a paused old owner may still append a batch it had buffered (a duplicate, never a reorder).
         */
        IDEMPOTENT
    }
    /** How long {@link #close()} waits for running batches and producers in total before it forces them. */
    public static final Duration DEFAULT_CLOSE_TIMEOUT = Duration.ofSeconds(5);

    private static final Logger log = LoggerFactory.getLogger(KafkaTransport.class);

    private final KafkaTransportConfig config;
    private final ProducerSettings settings;
    private final LaneProducers producers;
    private final Map<String, LaneWorker> lanes = new LinkedHashMap<>();
    private boolean closed;

    private KafkaTransport(KafkaTransportConfig config,
            Function<Map<String, Object>, Producer<byte[], byte[]>> producerFactory) {
        this.config = config;
        this.settings = new ProducerSettings(config);
        this.producers = new LaneProducers(settings, producerFactory);
        log.info("txoutbox-kafka: transport configuration: {}", KafkaTransportConfig.DESCRIPTOR.describe(config));
        if (config.mode() == Mode.TRANSACTIONAL) {
            log.info("txoutbox-kafka: transport ready (one transaction per batch): transactional.id = {}, "
                    + "producer config {}", config.explicitPrefix() ? "'" + config.transactionalIdPrefix()
                            + "' + lane name" : "'" + config.transactionalIdPrefix() + "<installation id>-<lane index>'",
                    config.describe());
        } else {
            log.info("txoutbox-kafka: transport ready (idempotent, one record batch per partition and batch): "
                    + "producer config {}", config.describe());
        }
    }

    public static Builder builder() {
        return new Builder();
    }

    /** The validated, effective configuration this transport was built with (secrets included: never log it whole). */
    public KafkaTransportConfig config() {
        return config;
    }

    /**
     * Sends the batch as one Kafka transaction on the lane's thread. The stage completes with one result per record,
     * in batch order (see the class comment for what each kind means here); it completes exceptionally only when the
     * transport is closed.
     */
    @Override
    public CompletionStage<List<SendResult>> send(String lane, List<OutboxRecord> batch) {
        Objects.requireNonNull(batch, "batch");
        if (lane == null || lane.isBlank()) {
            throw new IllegalArgumentException("lane must not be blank");
        }
        return send(lane, settings.transactionalId(lane), batch);
    }

    /**
     * What the relay calls: like {@link #send(String, List)}, with the lane's producer keyed by its outbox and index
     * ({@code transactional.id = txoutbox-<installation id>-<lane index>}, or the explicit prefix plus the lane's
     * name), so one transport may serve the relays of several outboxes.
     */
    @Override
    public CompletionStage<List<SendResult>> send(TransportLane lane, List<OutboxRecord> batch) {
        Objects.requireNonNull(lane, "lane");
        Objects.requireNonNull(batch, "batch");
        return send(lane.name(), settings.transactionalId(lane), batch);
    }

    private CompletionStage<List<SendResult>> send(String lane, String transactionalId, List<OutboxRecord> batch) {
        CompletableFuture<List<SendResult>> result = new CompletableFuture<>();
        if (batch.isEmpty()) {
            result.complete(List.of());
            return result;
        }
        List<OutboxRecord> records = List.copyOf(batch);
        synchronized (lanes) {
            if (closed) {
                return CompletableFuture.failedFuture(new IllegalStateException("KafkaTransport is closed"));
            }
            LaneWorker worker = lanes.computeIfAbsent(transactionalId, id -> producers.start(lane, id));
            try {
                worker.send(records, result);
            } catch (RejectedExecutionException e) {
                result.completeExceptionally(new IllegalStateException("KafkaTransport is closing", e));
            }
        }
        return result;
    }

    /**
     * Makes the lane's producer on the lane's thread now (in TRANSACTIONAL mode with initTransactions), so that the
     * lane's first batch does not wait for it; a batch sent meanwhile queues behind it. A failure is logged and the
     * first send tries again.
     */
    @Override
    public CompletionStage<Void> prepare(TransportLane lane) {
        CompletableFuture<Void> done = new CompletableFuture<>();
        if (lane == null) {
            done.complete(null);
            return done;
        }
        synchronized (lanes) {
            if (closed) {
                done.complete(null);
                return done;
            }
            LaneWorker worker = lanes.computeIfAbsent(settings.transactionalId(lane),
                    id -> producers.start(lane.name(), id));
            try {
                worker.prepare(done);
            } catch (RejectedExecutionException e) {
                log.debug("txoutbox-kafka: lane {}: not prepared, the transport is closing", lane.name());
                done.complete(null);
            }
        }
        return done;
    }

    /**
     * Stops the lanes and closes the producers, within {@link Builder#closeTimeout(Duration)} in total (plus a short
     * grace for interrupted batches). Batches still running are interrupted and reported {@code RETRIABLE}; an open
     * transaction is aborted by the next producer of its lane or by the broker's transaction timeout. Idempotent.
     */
    @Override
    public void close() {
        List<LaneWorker> workers;
        synchronized (lanes) {
            if (closed) {
                return;
            }
            closed = true;
            workers = new ArrayList<>(lanes.values());
        }
        long deadline = System.nanoTime() + config.closeTimeout().toNanos();
        boolean interrupted = false;
        try {
            workers.forEach(LaneWorker::shutdown);
            for (LaneWorker w : workers) {
                try {
                    if (!w.awaitTermination(remaining(deadline))) {
                        log.warn("txoutbox-kafka: lane {} did not finish its batch within the close timeout; "
                                + "interrupting it", w);
                        w.forceStop();
                    }
                } catch (InterruptedException e) {
                    interrupted = true;
                    w.forceStop();
                }
            }
        } finally {
            for (LaneWorker w : workers) {
                w.close(Duration.ofNanos(remaining(deadline)));
            }
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
            log.info("txoutbox-kafka: transport closed ({} lanes)", workers.size());
        }
    }

    private static long remaining(long deadline) {
        return Math.max(0, deadline - System.nanoTime());
    }

    @Override
    public String toString() {
        int laneCount;
        synchronized (lanes) {
            laneCount = lanes.size();
        }
        return "KafkaTransport[mode=" + config.mode() + ", transactionalIdPrefix=" + config.transactionalIdPrefix()
                + (config.explicitPrefix() ? "" : "<installation id>-<lane index>")
                + ", lanes=" + laneCount
                + ", config=" + config.describe() + "]";
    }

    /**
     * Builds a {@link KafkaTransport}. Every producer property can be set; the defaults are the {@code DEFAULT_*}
     * constants, unsafe overrides are rejected with an {@link io.txoutbox.InvalidConfigurationException} naming the
     * property.
     */
    public static final class Builder {

        private final Map<String, Object> properties = new LinkedHashMap<>();
        private String transactionalIdPrefix = DEFAULT_TRANSACTIONAL_ID_PREFIX;
        private boolean explicitPrefix;
        private Duration closeTimeout = DEFAULT_CLOSE_TIMEOUT;
        private Mode mode = Mode.TRANSACTIONAL;
        private Function<Map<String, Object>, Producer<byte[], byte[]>> producerFactory = LaneProducers::kafkaProducer;

        private Builder() {
        }

        /** Kafka's {@code bootstrap.servers}: comma-separated {@code host:port} list. Required. */
        public Builder bootstrapServers(String bootstrapServers) {
            return property(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers);
        }

        /** Any producer property (TLS, SASL, tuning); a later call for the same key wins. */
        public Builder property(String key, Object value) {
            Objects.requireNonNull(key, "key");
            properties.put(key, value);
            return this;
        }

        public Builder properties(Map<String, ?> properties) {
            ClientProperties.copy(properties, this::property);
            return this;
        }

        public Builder properties(Properties properties) {
            ClientProperties.copy(properties, this::property);
            return this;
        }

        /**
         * Names each lane's {@code transactional.id} yourself: {@code prefix + <relay name>-<lane index>}. Without it
         * (the default) the id is {@code txoutbox-<installation id>-<lane index>}, from the id {@code migrate} stored
         * in the outbox's schema: the same for every instance of one outbox, different for every other outbox, so
         * nothing needs configuring. With an explicit prefix that is yours to keep: every relay instance of one outbox
         * must use the same prefix and relay name (so a newer owner of a lane fences the older), and different
         * outboxes on one cluster different prefixes. {@code transactionalIdPrefix("txoutbox-")} keeps the ids of
         * versions before the installation id, for an upgrade without stopping every old relay first.
         */
        public Builder transactionalIdPrefix(String transactionalIdPrefix) {
            this.transactionalIdPrefix = transactionalIdPrefix;
            this.explicitPrefix = true;
            return this;
        }

        /** How batches are made atomic per key: {@link Mode#TRANSACTIONAL} (default) or {@link Mode#IDEMPOTENT}. */
        public Builder mode(Mode mode) {
            this.mode = mode;
            return this;
        }

        /** Total time {@link KafkaTransport#close()} waits before it interrupts lanes (default 5 s). */
        public Builder closeTimeout(Duration closeTimeout) {
            this.closeTimeout = closeTimeout;
            return this;
        }

        /**
         * Applies settings by name ({@code bootstrap-servers}, {@code mode}, ... or {@code txoutbox.kafka.mode}),
         * values as text or typed: {@code KafkaTransportConfig.DESCRIPTOR.apply(this, settings)}. Arbitrary producer
         * properties are {@link #properties(Map)}.
         */
        public Builder settings(Map<String, ?> settings) {
            return KafkaTransportConfig.DESCRIPTOR.apply(this, settings);
        }

        /** The configuration {@link #build()} would use, validated. */
        public KafkaTransportConfig config() {
            return KafkaTransportConfig.of(properties, transactionalIdPrefix, explicitPrefix, closeTimeout, mode);
        }

        /** For tests: how producers are made. */
        Builder producerFactory(Function<Map<String, Object>, Producer<byte[], byte[]>> producerFactory) {
            this.producerFactory = Objects.requireNonNull(producerFactory, "producerFactory");
            return this;
        }

        /** Validates the configuration and builds the transport; producers are created on each lane's first send. */
        public KafkaTransport build() {
            return new KafkaTransport(config(), producerFactory);
        }
    }
}
