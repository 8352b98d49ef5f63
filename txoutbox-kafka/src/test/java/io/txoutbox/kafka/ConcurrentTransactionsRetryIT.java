package io.txoutbox.kafka;

import static org.assertj.core.api.Assertions.assertThat;

import io.txoutbox.kafka.internal.LaneProducers;
import io.txoutbox.spi.OutboxRecord;
import io.txoutbox.spi.SendResult;
import io.txoutbox.testing.kafka.KafkaBroker;
import io.txoutbox.testing.kafka.MarkerGate;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.TransactionState;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.Metric;
import org.apache.kafka.common.MetricName;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Regression: {@code FirstRunIT} failed now and then with {@code longest_stall_ms 2287} (bound 1000), together with
 * ~27 {@code CONCURRENT_TRANSACTIONS} produce retries. In {@code TRANSACTIONAL} mode a lane begins its next
 * transaction as soon as the previous commit returned, and with transactions v2 that is before the broker has
 * written the previous transaction's markers. The next transaction's first produce request is then refused
 * {@code CONCURRENT_TRANSACTIONS} (after the broker's own retries, {@code add.partitions.to.txn.retry.backoff.max.ms}
 * = 100 ms), and the producer retries it with its exponential backoff, 100 ms doubling up to {@code
 * retry.backoff.max.ms} (±20 %, never above it); with Kafka's 1,000 ms the batch went out up to 1 s after the
 * markers were written.
 *
 * <p>Forced here, not waited for: the broker's {@link MarkerGate} holds the markers of the lane's transaction until
 * the lane's producer has been refused five times (its backoff is then at its cap), and releases them. The lane's
 * next batch must then go out soon after, not a whole backoff later.
 */
@Timeout(180)
class ConcurrentTransactionsRetryIT {

    private static final Logger log = LoggerFactory.getLogger(ConcurrentTransactionsRetryIT.class);
    private static final String TOPIC = "marker-wait";
    private static final String PREFIX = "marker-wait-";
    private static final String LANE = "0";
    /** Refusals before the markers are released: with Kafka's backoff the next retry is then 800–1,000 ms away. */
    private static final int REFUSALS = 5;
    /** The most a batch may lag the markers it waited for: a bounded retry plus the batch's own commit. */
    private static final long MAX_LAG_MS = 500;

    private static KafkaBroker kafka;

    @BeforeAll
    static void startBroker() {
        kafka = KafkaBroker.builder().markerGate().start();
        kafka.createTopic(TOPIC, 1);
    }

    @AfterAll
    static void stopBroker() {
        MarkerGate.release();
        if (kafka != null) {
            kafka.close();
        }
    }

    @Test
    void aBatchRefusedWhileThePreviousMarkersAreWrittenGoesOutSoonAfterTheyAre() throws Exception {
        AtomicReference<Producer<byte[], byte[]>> laneProducer = new AtomicReference<>();
        try (KafkaTransport transport = KafkaTransport.builder().bootstrapServers(kafka.bootstrapServers())
                .transactionalIdPrefix(PREFIX)
                .producerFactory(props -> {
                    Producer<byte[], byte[]> p = LaneProducers.kafkaProducer(props);
                    if ((PREFIX + LANE).equals(props.get(ProducerConfig.TRANSACTIONAL_ID_CONFIG))) {
                        laneProducer.set(p);
                    }
                    return p;
                }).build()) {
            // the lane's producer made and the partition known, markers written
            assertDelivered(send(transport).get(60, TimeUnit.SECONDS));
            // its commit returns before the coordinator has written the markers: hold only the next transaction's,
            // else the next batch waits for these (and aborts when its own send times out on a slow machine)
            awaitCompleteCommit(PREFIX + LANE);

            MarkerGate.hold();
            try {
                assertDelivered(send(transport).get(60, TimeUnit.SECONDS));
                assertThat(MarkerGate.awaitWaiting(1, Duration.ofSeconds(30)))
                        .as("the committed transaction's markers wait at the gate").isTrue();

                double before = retries(laneProducer.get());
                CompletableFuture<List<SendResult>> next = send(transport);
                List<Long> refusedAtMs = awaitRefusals(laneProducer.get(), before, next);
                assertThat(next).as("the batch waits for the previous markers").isNotDone();

                long released = System.nanoTime();
                MarkerGate.release();
                List<SendResult> results = next.get(60, TimeUnit.SECONDS);
                long lagMs = (System.nanoTime() - released) / 1_000_000;
                log.info("{} refusals at {} ms after the send; batch done {} ms after the markers were released",
                        REFUSALS, refusedAtMs, lagMs);

                assertDelivered(results);
                assertThat(lagMs).as("ms from the markers' release to the batch's end (refused at %s ms after "
                        + "the send: the retries' spacing is the producer's backoff)", refusedAtMs)
                        .isLessThan(MAX_LAG_MS);
            } finally {
                MarkerGate.release();
            }
        }
    }

    /** Waits until the coordinator has written the markers of the transactional id's last commit. */
    private static void awaitCompleteCommit(String transactionalId) throws Exception {
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers()))) {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            TransactionState state = null;
            while (System.nanoTime() < deadline) {
                state = admin.describeTransactions(List.of(transactionalId)).description(transactionalId)
                        .get(30, TimeUnit.SECONDS).state();
                if (state == TransactionState.COMPLETE_COMMIT) {
                    return;
                }
                Thread.sleep(20);
            }
            throw new AssertionError("the first transaction's markers were not written within 60 s (state " + state
                    + ")");
        }
    }

    private static CompletableFuture<List<SendResult>> send(KafkaTransport transport) {
        List<OutboxRecord> batch = List.of(TestRecords.json(TOPIC, "k", "{}"));
        return transport.send(LANE, batch).toCompletableFuture();
    }

    private static void assertDelivered(List<SendResult> results) {
        assertThat(results).singleElement().isInstanceOf(SendResult.Delivered.class);
    }

    /**
     * Waits until the producer counted {@value #REFUSALS} more retries (each one a produce request refused with
     * {@code CONCURRENT_TRANSACTIONS}: the markers are held); returns when each was seen, in ms after the start.
     */
    private static List<Long> awaitRefusals(Producer<byte[], byte[]> producer, double before,
            CompletableFuture<List<SendResult>> next) {
        long start = System.nanoTime();
        long deadline = start + TimeUnit.SECONDS.toNanos(30);
        List<Long> seenAtMs = new ArrayList<>();
        double counted = 0;
        while (counted < REFUSALS) {
            double now = retries(producer) - before;
            while (counted < now && counted < REFUSALS) {
                counted++;
                seenAtMs.add((System.nanoTime() - start) / 1_000_000);
            }
            assertThat(next).as("the batch must wait while the markers are held").isNotDone();
            assertThat(System.nanoTime()).as("%s of %s refusals seen after 30 s", counted, REFUSALS)
                    .isLessThan(deadline);
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(2));
        }
        return seenAtMs;
    }

    /** The producer's {@code record-retry-total}: records sent again after a retriable error. */
    private static double retries(Producer<byte[], byte[]> producer) {
        for (var e : producer.metrics().entrySet()) {
            MetricName name = e.getKey();
            if (name.name().equals("record-retry-total") && name.group().equals("producer-metrics")) {
                Metric m = e.getValue();
                return ((Number) m.metricValue()).doubleValue();
            }
        }
        throw new AssertionError("the producer has no record-retry-total metric");
    }
}
