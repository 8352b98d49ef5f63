package io.txoutbox.bench;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * A {@code read_committed} consumer of one topic on its own thread (all partitions assigned, from the beginning, no
 * group): counts records, hands each to an optional callback, and can tell whether it reached the end offsets.
 */
final class CommittedReader implements AutoCloseable {

    private final KafkaConsumer<byte[], byte[]> consumer;
    private final List<TopicPartition> partitions = new ArrayList<>();
    private final Consumer<ConsumerRecord<byte[], byte[]>> onRecord;
    private final AtomicLong count = new AtomicLong();
    private final CountDownLatch stopped = new CountDownLatch(1);
    private final CountDownLatch ready = new CountDownLatch(1);
    private final Thread thread;
    private volatile boolean stopping;
    private volatile long target = Long.MAX_VALUE;
    private volatile long reachedTargetNanos;
    private volatile boolean atEnd;
    private static final long END_GRACE_NANOS = 10_000_000_000L;
    private Map<TopicPartition, Long> end;
    private long firstAtTargetNanos;
    private volatile Throwable failure;
    private volatile String positions = "";

    CommittedReader(String bootstrap, String topic, Consumer<ConsumerRecord<byte[], byte[]>> onRecord) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "5000");
        p.put(ConsumerConfig.FETCH_MAX_WAIT_MS_CONFIG, "100");
        p.put(ConsumerConfig.CLIENT_ID_CONFIG, "bench-reader-" + topic);
        this.consumer = new KafkaConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer());
        this.onRecord = onRecord;
        for (PartitionInfo pi : consumer.partitionsFor(topic, Duration.ofSeconds(30))) {
            partitions.add(new TopicPartition(topic, pi.partition()));
        }
        consumer.assign(partitions);
        consumer.seekToBeginning(partitions);
        this.thread = new Thread(this::loop, "bench-reader-" + topic);
        thread.setDaemon(true);
        thread.start();
    }

    /** Waits until the consumer polled once (positions fetched), so its start-up is not timed. */
    CommittedReader awaitReady() throws InterruptedException {
        if (!ready.await(30, TimeUnit.SECONDS)) {
            throw new IllegalStateException("reader not ready after 30 s");
        }
        return this;
    }

    private void loop() {
        try {
            while (!stopping) {
                var records = consumer.poll(Duration.ofMillis(20));
                ready.countDown();
                for (ConsumerRecord<byte[], byte[]> r : records) {
                    if (onRecord != null) {
                        onRecord.accept(r);
                    }
                }
                long n = count.addAndGet(records.count());
                if (n >= target && reachedTargetNanos == 0) {
                    if (end == null) {
                        // fixed from now on: everything expected has been sent and committed
                        end = consumer.endOffsets(partitions);
                    }
                    StringBuilder sb = new StringBuilder();
                    boolean all = true;
                    for (TopicPartition tp : partitions) {
                        long pos = consumer.position(tp);
                        all &= pos >= end.get(tp);
                        sb.append(tp.partition()).append(':').append(pos).append('/').append(end.get(tp)).append(' ');
                    }
                    positions = sb.toString().trim();
                    // transaction markers come after the last record: the position passes them a poll later
                    if (all || System.nanoTime() - firstAtTarget(System.nanoTime()) > END_GRACE_NANOS) {
                        atEnd = all;
                        reachedTargetNanos = System.nanoTime();
                    }
                }
            }
        } catch (Throwable t) {
            failure = t;
            ready.countDown();
        } finally {
            consumer.close(Duration.ofSeconds(2));
            stopped.countDown();
        }
    }

    private long firstAtTarget(long now) {
        if (firstAtTargetNanos == 0) {
            firstAtTargetNanos = now;
        }
        return firstAtTargetNanos;
    }

    long count() {
        return count.get();
    }

    /**
     * Waits until {@code n} records were read and the positions reached the read_committed end offsets (or 10 s
     * passed after the count, see {@link #reachedEndOffsets()}); returns the nanoTime when that happened.
     */
    long awaitCount(long n, Duration timeout) throws InterruptedException {
        target = n;
        long deadline = System.nanoTime() + timeout.toNanos();
        while (reachedTargetNanos == 0) {
            if (failure != null) {
                throw new IllegalStateException("reader failed: " + failure, failure);
            }
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("reader saw " + count.get() + " of " + n + " records after "
                        + timeout);
            }
            Thread.sleep(0, 200_000);
        }
        return reachedTargetNanos;
    }

    /** Whether the positions reached the read_committed end offsets. */
    boolean reachedEndOffsets() {
        return atEnd;
    }

    /** partition:position/end of every partition when the target count was reached. */
    String positions() {
        return positions;
    }

    @Override
    public void close() throws InterruptedException {
        stopping = true;
        stopped.await(10, TimeUnit.SECONDS);
    }
}
