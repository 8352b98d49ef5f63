package io.txoutbox.kafka;

import io.txoutbox.Inbox;
import io.txoutbox.InboxEvent;
import io.txoutbox.InboxHandler;
import io.txoutbox.InboxMessage;

import io.txoutbox.InvalidConfigurationException;
import io.txoutbox.OutboxException;
import io.txoutbox.OutboxGrants;
import io.txoutbox.OutboxSchema;
import io.txoutbox.RetryPolicy;
import io.txoutbox.internal.inbox.DefaultInbox;
import io.txoutbox.internal.inbox.HandlerFailures;
import io.txoutbox.internal.Privileges;
import io.txoutbox.internal.config.Checks;
import io.txoutbox.internal.config.RetryDraft;
import io.txoutbox.internal.inbox.InboxBytes;
import io.txoutbox.kafka.internal.ClientProperties;
import io.txoutbox.kafka.internal.ConnectionTrouble;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Savepoint;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Properties;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Function;
import java.util.function.Predicate;
import javax.sql.DataSource;
import org.apache.kafka.clients.consumer.CommitFailedException;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeaders;
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
 *   topic/partition/offset and the exception class in headers ({@link DeadLetterHeaders}), and the partition moves
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
    private static final int MAX_ERROR_LENGTH = 1000;
    /**
     * How long the consumer may go without any partition before the listener is asked whether it speaks the
     * configured security.protocol (a plaintext client at a TLS port sees nothing but dropped connections). Short,
     * because the probe is cheap (one connection, one unauthenticated request) and runs once per streak.
     */
    static final Duration UNASSIGNED_PROBE_AFTER = Duration.ofSeconds(2);

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
    private final InboxHandler handler;
    private final Runnable afterStore;
    private final Function<ConsumerRecord<byte[], byte[]>, UUID> eventIds;
    private final Predicate<Throwable> permanentFailure;
    private final DefaultInbox inbox;
    private final Thread thread;
    private final AtomicBoolean started = new AtomicBoolean();
    private final AtomicBoolean closed = new AtomicBoolean();
    private volatile boolean stopping;
    /** The loop's error backoff waits on it, so that close() ends the wait at once. */
    private final Object backoffWait = new Object();
    private KafkaConsumer<byte[], byte[]> consumer;
    private KafkaProducer<byte[], byte[]> dltProducer;
    /** Partitions paused for a record's retry: the offset, its failed attempts, and when it is due. */
    private final Map<TopicPartition, RetryState> retrying = new HashMap<>();
    private final LongAdder polled = new LongAdder();
    private final LongAdder stored = new LongAdder();
    private final LongAdder applied = new LongAdder();
    private final LongAdder duplicates = new LongAdder();
    private final LongAdder stale = new LongAdder();
    private final LongAdder retries = new LongAdder();
    private final LongAdder deadLettered = new LongAdder();
    private final LongAdder batches = new LongAdder();
    private final LongAdder loopErrors = new LongAdder();
    private final LongAdder commitFailures = new LongAdder();
    private final LongAdder afterStoreFailures = new LongAdder();

    private record RetryState(long offset, int attempts, long dueNanos) {
    }

    private record Rejected(ConsumerRecord<byte[], byte[]> record, Throwable cause, int attempts) {
    }

    private KafkaInboxConsumer(KafkaInboxConsumerConfig config, Builder b) {
        this.config = config;
        this.dataSource = b.dataSource;
        this.handler = b.handler;
        this.afterStore = b.afterStore;
        this.eventIds = b.eventIds;
        this.permanentFailure = b.permanentFailure;
        this.inbox = new DefaultInbox(config.schema());
        this.thread = new Thread(this::run, "txoutbox-kafka-inbox-" + config.name());
        this.thread.setDaemon(true);
    }

    public static Builder builder() {
        return new Builder();
    }

    public KafkaInboxConsumer start() {
        if (closed.get()) {
            throw new OutboxException("Kafka inbox consumer " + config.name() + " is closed; build a new one");
        }
        if (!started.get()) {
            // what storing (or, in handle mode, the dedupe) needs; the handler's own statements are the application's
            Privileges.requireAtStart(dataSource, config.schema(), "Kafka inbox consumer '" + config.name() + "'", log,
                    List.of(handler == null ? OutboxGrants.Component.INBOX_RECEIVER : OutboxGrants.Component.DEDUPE));
        }
        if (started.compareAndSet(false, true)) {
            log.info("txoutbox-kafka-inbox {}: starting in {} mode on {}: {}; client properties {}", config.name(),
                    handler == null ? "store" : "handle", config.schema(),
                    KafkaInboxConsumerConfig.DESCRIPTOR.describe(config), ClientProperties.describe(config.properties()));
            thread.start();
        }
        return this;
    }

    public Stats stats() {
        return new Stats(polled.sum(), stored.sum(), applied.sum(), duplicates.sum(), stale.sum(), retries.sum(),
                deadLettered.sum(), batches.sum(), loopErrors.sum(), commitFailures.sum(),
                afterStoreFailures.sum());
    }

    /** Stops polling after the current batch (bounded wait), closes the Kafka clients. Idempotent. */
    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        stopping = true;
        synchronized (backoffWait) {
            backoffWait.notifyAll();
        }
        KafkaConsumer<byte[], byte[]> c = consumer;
        if (c != null) {
            c.wakeup();
        }
        boolean interrupted = false;
        if (started.get()) {
            try {
                thread.join(TimeUnit.SECONDS.toMillis(30));
            } catch (InterruptedException e) {
                interrupted = true;
            }
            if (thread.isAlive()) {
                log.warn("txoutbox-kafka-inbox {}: loop did not stop in time; interrupting it", config.name());
                thread.interrupt();
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
        log.info("txoutbox-kafka-inbox {}: closed; {}", config.name(), stats());
    }

    // ---- the loop ---------------------------------------------------------------------------------------------

    private void run() {
        long errorBackoffMs = 0;
        ConnectionTrouble trouble = new ConnectionTrouble("txoutbox-kafka-inbox " + config.name(), config.properties());
        long unassignedSince = System.nanoTime();
        try {
            consumer = new KafkaConsumer<>(config.consumerProperties());
            if (config.deadLetterTopic() != null) {
                dltProducer = new KafkaProducer<>(config.producerProperties());
            }
            consumer.subscribe(config.topics(), new Rebalance());
            while (!stopping) {
                ConsumerRecords<byte[], byte[]> records;
                try {
                    resumeDuePartitions();
                    records = consumer.poll(nextPollTimeout());
                } catch (WakeupException e) {
                    break;
                } catch (Throwable t) {
                    loopErrors.increment();
                    String clear = trouble.explain(t);
                    if (clear != null) { // a setting to fix: said once per streak, without a stack trace per poll
                        trouble.report(clear, "nothing is stored and no offset committed; polling again with backoff");
                    } else {
                        log.error("txoutbox-kafka-inbox {}: poll failed: {}", config.name(), t.toString(), t);
                    }
                    errorBackoffMs = backoff(errorBackoffMs);
                    continue;
                }
                unassignedSince = watchConnection(trouble, unassignedSince);
                if (records.isEmpty()) {
                    continue;
                }
                polled.add(records.count());
                try {
                    if (handler == null) {
                        storeBatch(records);
                    } else {
                        handleBatch(records);
                    }
                    batches.increment();
                    errorBackoffMs = 0;
                } catch (WakeupException e) {
                    rewind(records);
                    break;
                } catch (Throwable t) { // nothing of the batch counts as done: read it again
                    loopErrors.increment();
                    log.error("txoutbox-kafka-inbox {}: batch of {} records failed, reading it again: {}", config.name(),
                            records.count(), t.toString(), t);
                    rewind(records);
                    errorBackoffMs = backoff(errorBackoffMs);
                }
            }
        } catch (Throwable t) {
            log.error("txoutbox-kafka-inbox {}: consumer loop ended by {}", config.name(), t.toString(), t);
        } finally {
            try {
                if (consumer != null) {
                    consumer.close(Duration.ofSeconds(10));
                }
            } catch (RuntimeException e) {
                log.warn("txoutbox-kafka-inbox {}: consumer did not close cleanly: {}", config.name(), e.toString());
            }
            if (dltProducer != null) {
                try {
                    dltProducer.close(Duration.ofSeconds(10));
                } catch (RuntimeException e) {
                    log.warn("txoutbox-kafka-inbox {}: producer did not close cleanly: {}", config.name(), e.toString());
                }
            }
        }
    }

    /**
     * After a poll: with partitions the connection is fine (the streak ends); without any for
     * {@link #UNASSIGNED_PROBE_AFTER}, a security.protocol that does not match the listener is reported (the probe
     * runs once per streak). Returns since when the consumer has had no partition.
     */
    private long watchConnection(ConnectionTrouble trouble, long unassignedSince) {
        long now = System.nanoTime();
        if (!consumer.assignment().isEmpty()) {
            trouble.connected();
            return now;
        }
        if (now - unassignedSince > UNASSIGNED_PROBE_AFTER.toNanos()) {
            String mismatch = trouble.protocolMismatch();
            if (mismatch != null) {
                trouble.report(mismatch, "nothing is consumed; the consumer keeps trying");
            }
        }
        return unassignedSince;
    }

    private long backoff(long previousMs) {
        long ms = Math.min(5_000, Math.max(100, previousMs * 2));
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(ms);
        try {
            synchronized (backoffWait) { // close() notifies: it must not wait out a backoff of up to 5 s
                long left;
                while (!stopping && (left = deadline - System.nanoTime()) > 0) {
                    TimeUnit.NANOSECONDS.timedWait(backoffWait, left);
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            stopping = true;
        }
        return ms;
    }

    /** Positions every partition of the batch back to its first record, so the batch is read again. */
    private void rewind(ConsumerRecords<byte[], byte[]> records) {
        for (TopicPartition p : records.partitions()) {
            try {
                consumer.seek(p, records.records(p).get(0).offset());
            } catch (RuntimeException e) {
                // no longer assigned: its new owner starts from the committed offset
            }
        }
    }

    private Duration nextPollTimeout() {
        Duration timeout = config.pollTimeout();
        long now = System.nanoTime();
        for (RetryState s : retrying.values()) {
            long left = Math.max(1, TimeUnit.NANOSECONDS.toMillis(s.dueNanos - now));
            if (left < timeout.toMillis()) {
                timeout = Duration.ofMillis(left);
            }
        }
        return timeout;
    }

    private void resumeDuePartitions() {
        long now = System.nanoTime();
        List<TopicPartition> due = new ArrayList<>();
        for (Map.Entry<TopicPartition, RetryState> e : retrying.entrySet()) {
            if (e.getValue().dueNanos - now <= 0 && consumer.paused().contains(e.getKey())) {
                due.add(e.getKey());
            }
        }
        if (!due.isEmpty()) {
            consumer.resume(due);
        }
    }

    private final class Rebalance implements ConsumerRebalanceListener {
        // Called inside poll() on the loop thread: no batch is in progress, its offsets are already committed.
        @Override
        public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
            partitions.forEach(retrying::remove);
            log.info("txoutbox-kafka-inbox {}: partitions revoked: {}", config.name(), partitions);
        }

        @Override
        public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
            log.info("txoutbox-kafka-inbox {}: partitions assigned: {}", config.name(), partitions);
        }

        @Override
        public void onPartitionsLost(Collection<TopicPartition> partitions) {
            partitions.forEach(retrying::remove);
            log.warn("txoutbox-kafka-inbox {}: partitions lost: {}", config.name(), partitions);
        }
    }

    // ---- store mode -------------------------------------------------------------------------------------------

    private void storeBatch(ConsumerRecords<byte[], byte[]> records) throws Exception {
        List<InboxMessage> messages = new ArrayList<>(records.count());
        List<ConsumerRecord<byte[], byte[]>> sources = new ArrayList<>(records.count());
        List<Rejected> rejected = new ArrayList<>();
        Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
        for (TopicPartition p : records.partitions()) {
            for (ConsumerRecord<byte[], byte[]> r : records.records(p)) {
                try {
                    messages.add(toMessage(r));
                    sources.add(r);
                } catch (RuntimeException e) {
                    rejected.add(new Rejected(r, e, 1));
                }
                offsets.put(p, new OffsetAndMetadata(r.offset() + 1));
            }
        }
        try (Connection c = dataSource.getConnection()) {
            c.setAutoCommit(false);
            try {
                DefaultInbox.Received received = inbox.receiveEach(c, config.consumer(), messages);
                stored.add(received.inserted());
                for (DefaultInbox.Refused x : received.refused()) {
                    SQLException e = x.cause();
                    rejected.add(new Rejected(sources.get(x.index()), new OutboxException("the database refused "
                            + "the row: " + e.getMessage() + " (SQLState " + e.getSQLState() + ")", e), 1));
                }
                if (dltProducer == null) {
                    storeDead(c, rejected); // in the batch's transaction: the offsets pass them only once they are kept
                }
                c.commit();
            } catch (SQLException | RuntimeException e) {
                rollbackQuietly(c);
                throw e;
            }
        }
        if (dltProducer != null) {
            deadLetter(rejected);
        } else {
            deadLettered.add(rejected.size());
        }
        commit(offsets);
        runAfterStore();
    }

    /**
     * Store mode without a dead-letter topic: a record that cannot be stored as it is (its event id or version header
     * is unreadable, or the database refused its row) is kept as a {@code DEAD} inbox row with the reason, never
     * processed, so its partition and its key move on and an operator finds it with the other dead events.
     */
    private void storeDead(Connection c, List<Rejected> rejected) {
        for (Rejected x : rejected) {
            ConsumerRecord<byte[], byte[]> r = x.record;
            InboxMessage m = toLenientMessage(r);
            String reason = "not stored as received: " + x.cause;
            inbox.storeDead(c, config.consumer(), m, reason);
            log.error("txoutbox-kafka-inbox {}: record {}-{}@{} (event {}) cannot be stored as it is; kept as a DEAD "
                    + "inbox row (no dead-letter topic configured): {}", config.name(), r.topic(), r.partition(),
                    r.offset(), m.eventId(), x.cause.toString());
        }
    }

    /**
     * The batch is committed in the database and in Kafka when the callback runs, so its failure is the callback's
     * alone: logged and counted, never a reason to read the batch again (that would call it again, for ever).
     */
    private void runAfterStore() {
        if (afterStore == null) {
            return;
        }
        try {
            afterStore.run();
        } catch (Throwable t) {
            afterStoreFailures.increment();
            log.error("txoutbox-kafka-inbox {}: the afterStore callback failed after a stored batch (the batch stays "
                    + "stored and committed): {}", config.name(), t.toString(), t);
        }
    }

    // ---- handle mode ------------------------------------------------------------------------------------------

    private void handleBatch(ConsumerRecords<byte[], byte[]> records) throws Exception {
        Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
        List<Rejected> rejected = new ArrayList<>();
        Map<TopicPartition, RetryState> toRetry = new HashMap<>();
        long appliedNow = 0;
        long duplicatesNow = 0;
        long staleNow = 0;
        try (Connection c = dataSource.getConnection()) {
            c.setAutoCommit(false);
            try {
                for (TopicPartition p : records.partitions()) {
                    for (ConsumerRecord<byte[], byte[]> r : records.records(p)) {
                        Inbox.Outcome outcome = null;
                        Throwable failure = null;
                        Savepoint sp = c.setSavepoint();
                        try {
                            InboxMessage m = toMessage(r);
                            InboxEvent event = toEvent(m, r);
                            Inbox.AggregateVersion version = config.checkVersions() && m.aggregateType() != null
                                    && m.aggregateId() != null && m.aggregateVersion() != null
                                    ? Inbox.version(m.aggregateType(), m.aggregateId(), m.aggregateVersion()) : null;
                            outcome = inbox.once(c, config.consumer(), m.eventId(), version,
                                    conn -> handler.handle(conn, event));
                            c.releaseSavepoint(sp);
                        } catch (Throwable t) {
                            c.rollback(sp); // a broken connection throws here: the whole batch is read again
                            failure = t;
                        }
                        if (failure == null) {
                            switch (outcome) {
                                case APPLIED -> appliedNow++;
                                case DUPLICATE -> duplicatesNow++;
                                case STALE_VERSION -> staleNow++;
                            }
                            offsets.put(p, new OffsetAndMetadata(r.offset() + 1));
                            continue;
                        }
                        RetryState previous = retrying.get(p);
                        int attempts = (previous != null && previous.offset == r.offset() ? previous.attempts : 0) + 1;
                        boolean permanent = permanentFailure.test(failure);
                        if (permanent || attempts >= config.retry().maxAttempts()) {
                            log.error("txoutbox-kafka-inbox {}: record {}-{}@{} {}; to the dead-letter topic {}: {}",
                                    config.name(), r.topic(), r.partition(), r.offset(),
                                    permanent ? "failed permanently" : "failed " + attempts + " times",
                                    config.deadLetterTopic(), failure.toString());
                            rejected.add(new Rejected(r, failure, attempts));
                            offsets.put(p, new OffsetAndMetadata(r.offset() + 1));
                            continue;
                        }
                        long delay = config.retry().backoffAfter(attempts).toMillis();
                        log.warn("txoutbox-kafka-inbox {}: record {}-{}@{} failed, attempt {} of {}, partition paused"
                                + " {} ms: {}", config.name(), r.topic(), r.partition(), r.offset(), attempts,
                                config.retry().maxAttempts(), delay, failure.toString());
                        toRetry.put(p, new RetryState(r.offset(), attempts,
                                System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(delay)));
                        break; // the rest of this partition waits behind the failed record
                    }
                }
                c.commit();
            } catch (SQLException | RuntimeException e) {
                rollbackQuietly(c);
                throw e;
            }
        }
        applied.add(appliedNow);
        duplicates.add(duplicatesNow);
        stale.add(staleNow);
        for (TopicPartition p : records.partitions()) {
            if (!toRetry.containsKey(p)) {
                retrying.remove(p);
            }
        }
        deadLetter(rejected);
        for (Map.Entry<TopicPartition, RetryState> e : toRetry.entrySet()) {
            retries.increment();
            retrying.put(e.getKey(), e.getValue());
            consumer.seek(e.getKey(), e.getValue().offset);
            consumer.pause(List.of(e.getKey()));
        }
        commit(offsets);
    }

    // ---- shared -----------------------------------------------------------------------------------------------

    private void commit(Map<TopicPartition, OffsetAndMetadata> offsets) {
        if (offsets.isEmpty()) {
            return;
        }
        try {
            consumer.commitSync(offsets);
        } catch (CommitFailedException | org.apache.kafka.common.errors.RebalanceInProgressException e) {
            // The group moved on: the new owner reads these records again and the inbox drops them as duplicates.
            commitFailures.increment();
            log.warn("txoutbox-kafka-inbox {}: offset commit refused after a rebalance ({}); the records are "
                    + "committed in the database and will be deduplicated when redelivered", config.name(), e.toString());
        }
    }

    /** Sends rejected records to the dead-letter topic and waits for the acks (a failure reads the batch again). */
    private void deadLetter(List<Rejected> rejected) throws Exception {
        if (rejected.isEmpty()) {
            return;
        }
        List<java.util.concurrent.Future<RecordMetadata>> acks = new ArrayList<>();
        for (Rejected x : rejected) {
            ConsumerRecord<byte[], byte[]> r = x.record;
            RecordHeaders headers = new RecordHeaders();
            for (Header h : r.headers()) {
                if (!h.key().startsWith("dlt-")) {
                    headers.add(h);
                }
            }
            headers.add(DeadLetterHeaders.REASON, utf8(truncate(String.valueOf(x.cause.getMessage()))));
            headers.add(DeadLetterHeaders.EXCEPTION, utf8(x.cause.getClass().getName()));
            headers.add(DeadLetterHeaders.ORIGINAL_TOPIC, utf8(r.topic()));
            headers.add(DeadLetterHeaders.ORIGINAL_PARTITION, utf8(Integer.toString(r.partition())));
            headers.add(DeadLetterHeaders.ORIGINAL_OFFSET, utf8(Long.toString(r.offset())));
            headers.add(DeadLetterHeaders.ATTEMPTS, utf8(Integer.toString(x.attempts)));
            headers.add(DeadLetterHeaders.CONSUMER, utf8(config.consumer()));
            acks.add(dltProducer.send(new ProducerRecord<>(config.deadLetterTopic(), null, r.key(), r.value(), headers)));
        }
        dltProducer.flush();
        for (java.util.concurrent.Future<RecordMetadata> f : acks) {
            f.get(KafkaInboxConsumerConfig.DEAD_LETTER_SEND_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS); // a failure reads the batch again
        }
        deadLettered.add(rejected.size());
    }

    /**
     * The record as an inbox message. The key and the header values stay bytes ({@link InboxMessage#keyBytes},
     * {@link InboxMessage#headerBytes}); the event type and aggregate columns get their headers' text forms.
     */
    private InboxMessage toMessage(ConsumerRecord<byte[], byte[]> r) {
        UUID eventId = Objects.requireNonNull(eventIds.apply(r), "eventIds returned null");
        Map<String, byte[]> headerBytes = headerBytes(r);
        Map<String, String> headers = InboxBytes.textHeaders(headerBytes);
        Long version = null;
        String v = headers.get(KafkaHeaders.AGGREGATE_VERSION);
        if (v != null) {
            try {
                version = Long.parseLong(v);
            } catch (NumberFormatException e) {
                throw new OutboxException("record " + r.topic() + "-" + r.partition() + "@" + r.offset() + " has an '"
                        + KafkaHeaders.AGGREGATE_VERSION + "' header that is not a number", e);
            }
        }
        return InboxMessage.builder(eventId).key(r.key()).eventType(headers.get(KafkaHeaders.EVENT_TYPE))
                .aggregate(headers.get(KafkaHeaders.AGGREGATE_TYPE), headers.get(KafkaHeaders.AGGREGATE_ID), version)
                .payload(r.value()).headerBytes(headerBytes).source(r.topic(), r.partition(), r.offset()).build();
    }

    /** A rejected record as a message for its DEAD row: no version, and the coordinates' id if its own is unreadable. */
    private InboxMessage toLenientMessage(ConsumerRecord<byte[], byte[]> r) {
        UUID eventId;
        try {
            eventId = Objects.requireNonNull(eventIds.apply(r));
        } catch (RuntimeException e) {
            eventId = EventIds.fromCoordinates(r);
        }
        Map<String, byte[]> headerBytes = headerBytes(r);
        Map<String, String> headers = InboxBytes.textHeaders(headerBytes);
        return InboxMessage.builder(eventId).key(r.key()).eventType(headers.get(KafkaHeaders.EVENT_TYPE))
                .aggregate(headers.get(KafkaHeaders.AGGREGATE_TYPE), headers.get(KafkaHeaders.AGGREGATE_ID), null)
                .payload(r.value()).headerBytes(headerBytes).source(r.topic(), r.partition(), r.offset()).build();
    }

    /** The record's headers by name, in order, values exactly as they came (a repeated name keeps its last value). */
    private static Map<String, byte[]> headerBytes(ConsumerRecord<byte[], byte[]> r) {
        Map<String, byte[]> headerBytes = new LinkedHashMap<>();
        for (Header h : r.headers()) {
            headerBytes.put(h.key(), h.value());
        }
        return headerBytes;
    }

    private InboxEvent toEvent(InboxMessage m, ConsumerRecord<byte[], byte[]> r) {
        RetryState s = retrying.get(new TopicPartition(r.topic(), r.partition()));
        int attempts = s != null && s.offset == r.offset() ? s.attempts : 0;
        return new InboxEvent(0, config.consumer(), m.eventId(), m.key(), m.eventType(), m.aggregateType(),
                m.aggregateId(), m.aggregateVersion(), m.payload(), m.headers(), r.topic(), r.partition(), r.offset(),
                Instant.ofEpochMilli(r.timestamp()), attempts, m.keyBytes(), m.headerBytes());
    }

    private static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    private static String truncate(String s) {
        return s.length() <= MAX_ERROR_LENGTH ? s : s.substring(0, MAX_ERROR_LENGTH) + "…";
    }

    private static void rollbackQuietly(Connection c) {
        try {
            c.rollback();
        } catch (SQLException ignored) {
            // broken connection: nothing committed
        }
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
        private Function<ConsumerRecord<byte[], byte[]>, UUID> eventIds = EventIds.fromHeaderOrCoordinates();
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

        /** How to get a record's event id; default {@link EventIds#fromHeaderOrCoordinates()}. */
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
