package io.txoutbox.kafka.internal;

import io.txoutbox.Inbox;
import io.txoutbox.InboxEvent;
import io.txoutbox.InboxHandler;
import io.txoutbox.InboxMessage;
import io.txoutbox.internal.inbox.DefaultInbox;
import io.txoutbox.kafka.KafkaInboxConsumer;
import io.txoutbox.kafka.KafkaInboxConsumerConfig;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Savepoint;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import javax.sql.DataSource;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Handle mode: each record's handler runs through {@link Inbox#once} (dedupe row and effects in one transaction;
 * optional version check), all records of a poll in one database transaction with a savepoint per record. A
 * transient failure pauses its partition and retries the record with backoff; a permanent failure, or the last
 * attempt, sends the record to the dead-letter topic and the partition moves on.
 */
final class HandleMode implements ConsumerMode {

    private static final Logger log = LoggerFactory.getLogger(KafkaInboxConsumer.class);

    /** A partition paused for a record's retry: the offset, its failed attempts, and when it is due. */
    private record RetryState(long offset, int attempts, long dueNanos) {
    }

    private final KafkaInboxConsumerConfig config;
    private final DataSource dataSource;
    private final DefaultInbox inbox;
    private final InboxMessages messages;
    private final InboxHandler handler;
    private final Predicate<Throwable> permanentFailure;
    private final ConsumerCounters counters;
    /** Partitions paused for a record's retry; the loop thread's only. */
    private final Map<TopicPartition, RetryState> retrying = new HashMap<>();

    HandleMode(KafkaInboxConsumerConfig config, DataSource dataSource, InboxMessages messages, InboxHandler handler,
            Predicate<Throwable> permanentFailure, ConsumerCounters counters) {
        this.config = config;
        this.dataSource = dataSource;
        this.inbox = new DefaultInbox(config.schema());
        this.messages = messages;
        this.handler = handler;
        this.permanentFailure = permanentFailure;
        this.counters = counters;
    }

    @Override
    public String name() {
        return "handle";
    }

    @Override
    public void beforePoll(ConsumerLoop loop) {
        long now = System.nanoTime();
        List<TopicPartition> due = new ArrayList<>();
        for (Map.Entry<TopicPartition, RetryState> e : retrying.entrySet()) {
            if (e.getValue().dueNanos() - now <= 0 && loop.consumer().paused().contains(e.getKey())) {
                due.add(e.getKey());
            }
        }
        if (!due.isEmpty()) {
            loop.consumer().resume(due);
        }
    }

    @Override
    public Duration pollTimeout(Duration configured) {
        Duration timeout = configured;
        long now = System.nanoTime();
        for (RetryState s : retrying.values()) {
            long left = Math.max(1, TimeUnit.NANOSECONDS.toMillis(s.dueNanos() - now));
            if (left < timeout.toMillis()) {
                timeout = Duration.ofMillis(left);
            }
        }
        return timeout;
    }

    @Override
    public void forget(Collection<TopicPartition> partitions) {
        partitions.forEach(retrying::remove);
    }

    @Override
    public void process(ConsumerRecords<byte[], byte[]> records, ConsumerLoop loop) throws Exception {
        Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
        List<DeadLetters.Rejected> rejected = new ArrayList<>();
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
                            InboxMessage m = messages.toMessage(r);
                            InboxEvent event = InboxMessages.toEvent(config.consumer(), m, r, attemptsSoFar(p, r));
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
                        int attempts = (previous != null && previous.offset() == r.offset() ? previous.attempts() : 0) + 1;
                        boolean permanent = permanentFailure.test(failure);
                        if (permanent || attempts >= config.retry().maxAttempts()) {
                            log.error("txoutbox-kafka-inbox {}: record {}-{}@{} {}; to the dead-letter topic {}: {}",
                                    config.name(), r.topic(), r.partition(), r.offset(),
                                    permanent ? "failed permanently" : "failed " + attempts + " times",
                                    config.deadLetterTopic(), failure.toString());
                            rejected.add(new DeadLetters.Rejected(r, failure, attempts));
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
                ConsumerLoop.rollbackQuietly(c);
                throw e;
            }
        }
        counters.applied.add(appliedNow);
        counters.duplicates.add(duplicatesNow);
        counters.stale.add(staleNow);
        for (TopicPartition p : records.partitions()) {
            if (!toRetry.containsKey(p)) {
                retrying.remove(p);
            }
        }
        loop.deadLetters().send(rejected);
        for (Map.Entry<TopicPartition, RetryState> e : toRetry.entrySet()) {
            counters.retries.increment();
            retrying.put(e.getKey(), e.getValue());
            loop.consumer().seek(e.getKey(), e.getValue().offset());
            loop.consumer().pause(List.of(e.getKey()));
        }
        loop.commit(offsets);
    }

    /** The record's failed attempts so far: its partition's retry state when that is about this very record. */
    private int attemptsSoFar(TopicPartition p, ConsumerRecord<byte[], byte[]> r) {
        RetryState s = retrying.get(p);
        return s != null && s.offset() == r.offset() ? s.attempts() : 0;
    }
}
