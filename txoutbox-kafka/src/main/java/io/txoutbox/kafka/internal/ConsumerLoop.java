package io.txoutbox.kafka.internal;

import io.txoutbox.InboxHandler;
import io.txoutbox.kafka.KafkaInboxConsumer;
import io.txoutbox.kafka.KafkaInboxConsumerConfig;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Collection;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import java.util.function.Predicate;
import javax.sql.DataSource;
import org.apache.kafka.clients.consumer.CommitFailedException;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The inbox consumer's loop: one thread polls, hands each batch to its {@link ConsumerMode}, and commits offsets
 * (synchronously) only after the mode's database transaction committed, so a crash or a rebalance at any point
 * redelivers records whose effects may already be committed, and the inbox drops them. A partition revoked in a
 * rebalance is therefore never in the middle of a batch. A failed batch is read again after a backoff; a setting to
 * fix (TLS, SASL, a listener speaking another protocol) is said once per streak ({@link ConnectionTrouble}).
 * Public for {@link KafkaInboxConsumer}, which is its facade; logs under that class's name.
 */
public final class ConsumerLoop {

    private static final Logger log = LoggerFactory.getLogger(KafkaInboxConsumer.class);
    /**
     * How long the consumer may go without any partition before the listener is asked whether it speaks the
     * configured security.protocol (a plaintext client at a TLS port sees nothing but dropped connections). Short,
     * because the probe is cheap (one connection, one unauthenticated request) and runs once per streak.
     */
    static final Duration UNASSIGNED_PROBE_AFTER = Duration.ofSeconds(2);

    private final KafkaInboxConsumerConfig config;
    private final ConsumerMode mode;
    private final ConsumerCounters counters;
    private final Thread thread;
    private volatile boolean stopping;
    /** The error backoff waits on it, so that close() ends the wait at once. */
    private final Object backoffWait = new Object();
    private volatile KafkaConsumer<byte[], byte[]> consumer;
    private DeadLetters deadLetters;

    private ConsumerLoop(KafkaInboxConsumerConfig config, ConsumerMode mode, ConsumerCounters counters) {
        this.config = config;
        this.mode = mode;
        this.counters = counters;
        this.thread = new Thread(this::run, "txoutbox-kafka-inbox-" + config.name());
        this.thread.setDaemon(true);
    }

    /** Store mode: records into {@code inbox_event}, then {@code afterStore} (may be null). */
    public static ConsumerLoop store(KafkaInboxConsumerConfig config, DataSource dataSource,
            Function<ConsumerRecord<byte[], byte[]>, UUID> eventIds, Runnable afterStore, ConsumerCounters counters) {
        return new ConsumerLoop(config, new StoreMode(config, dataSource, new InboxMessages(eventIds), afterStore,
                counters), counters);
    }

    /** Handle mode: the handler once per event, in the consumer's database transaction. */
    public static ConsumerLoop handle(KafkaInboxConsumerConfig config, DataSource dataSource,
            Function<ConsumerRecord<byte[], byte[]>, UUID> eventIds, InboxHandler handler,
            Predicate<Throwable> permanentFailure, ConsumerCounters counters) {
        return new ConsumerLoop(config, new HandleMode(config, dataSource, new InboxMessages(eventIds), handler,
                permanentFailure, counters), counters);
    }

    /** "store" or "handle". */
    public String mode() {
        return mode.name();
    }

    public void start() {
        thread.start();
    }

    /**
     * Stops polling after the current batch; when the loop was started, waits up to 30 s for it, then interrupts it.
     * An interrupt of the caller while it waits ends the wait and is kept on its thread.
     */
    public void stop(boolean started) {
        stopping = true;
        synchronized (backoffWait) {
            backoffWait.notifyAll();
        }
        KafkaConsumer<byte[], byte[]> c = consumer;
        if (c != null) {
            c.wakeup();
        }
        boolean interrupted = false;
        if (started) {
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
    }

    KafkaConsumer<byte[], byte[]> consumer() {
        return consumer;
    }

    /** The dead-letter sender; null when no dead-letter topic is configured (store mode only). */
    DeadLetters deadLetters() {
        return deadLetters;
    }

    private void run() {
        long errorBackoffMs = 0;
        ConnectionTrouble trouble = new ConnectionTrouble("txoutbox-kafka-inbox " + config.name(), config.properties());
        long unassignedSince = System.nanoTime();
        try {
            // no client while the listener speaks TLS to an unencrypted security.protocol (KAFKA-4090: ~336 MB per
            // connection attempt); the listener is asked again every few seconds
            for (String refusal; !stopping && (refusal = trouble.beforeClient()) != null; ) {
                counters.loopErrors.increment();
                trouble.report(refusal, "no consumer is made and nothing is consumed until it is fixed");
                errorBackoffMs = backoff(errorBackoffMs);
            }
            if (stopping) {
                return;
            }
            errorBackoffMs = 0;
            consumer = new KafkaConsumer<>(ConsumerClients.consumerProperties(config));
            if (config.deadLetterTopic() != null) {
                deadLetters = new DeadLetters(config, counters);
            }
            consumer.subscribe(config.topics(), new Rebalance());
            while (!stopping) {
                ConsumerRecords<byte[], byte[]> records;
                try {
                    mode.beforePoll(this);
                    records = consumer.poll(mode.pollTimeout(config.pollTimeout()));
                } catch (WakeupException e) {
                    break;
                } catch (Throwable t) {
                    counters.loopErrors.increment();
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
                counters.polled.add(records.count());
                try {
                    mode.process(records, this);
                    counters.batches.increment();
                    errorBackoffMs = 0;
                } catch (WakeupException e) {
                    rewind(records);
                    break;
                } catch (Throwable t) { // nothing of the batch counts as done: read it again
                    counters.loopErrors.increment();
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
            if (deadLetters != null) {
                deadLetters.close();
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

    /** Commits the batch's offsets; refused after a rebalance, the new owner reads them again and dedupes them. */
    void commit(Map<TopicPartition, OffsetAndMetadata> offsets) {
        if (offsets.isEmpty()) {
            return;
        }
        try {
            consumer.commitSync(offsets);
        } catch (CommitFailedException | org.apache.kafka.common.errors.RebalanceInProgressException e) {
            // The group moved on: the new owner reads these records again and the inbox drops them as duplicates.
            counters.commitFailures.increment();
            log.warn("txoutbox-kafka-inbox {}: offset commit refused after a rebalance ({}); the records are "
                    + "committed in the database and will be deduplicated when redelivered", config.name(), e.toString());
        }
    }

    static void rollbackQuietly(Connection c) {
        try {
            c.rollback();
        } catch (SQLException ignored) {
            // broken connection: nothing committed
        }
    }

    private final class Rebalance implements ConsumerRebalanceListener {
        // Called inside poll() on the loop thread: no batch is in progress, its offsets are already committed.
        @Override
        public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
            mode.forget(partitions);
            log.info("txoutbox-kafka-inbox {}: partitions revoked: {}", config.name(), partitions);
        }

        @Override
        public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
            log.info("txoutbox-kafka-inbox {}: partitions assigned: {}", config.name(), partitions);
        }

        @Override
        public void onPartitionsLost(Collection<TopicPartition> partitions) {
            mode.forget(partitions);
            log.warn("txoutbox-kafka-inbox {}: partitions lost: {}", config.name(), partitions);
        }
    }
}
