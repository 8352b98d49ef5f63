package io.txoutbox.kafka.internal;

import io.txoutbox.OutboxException;
import io.txoutbox.spi.OutboxRecord;
import io.txoutbox.spi.SendResult;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

/**
 * A lane's producer and the one thread ({@code txoutbox-kafka-<lane>}) that runs its batches in order. Public
 * because {@link io.txoutbox.kafka.KafkaTransport} keeps one per {@code transactional.id} and closes them.
 */
public final class LaneWorker {

    private final LaneProducer producer;
    private final ExecutorService thread;

    LaneWorker(String lane, LaneProducer producer) {
        this.producer = producer;
        this.thread = Executors.newSingleThreadExecutor(r -> {
            Thread t = new Thread(r, "txoutbox-kafka-" + lane);
            t.setDaemon(true);
            return t;
        });
    }

    /**
     * Queues the batch behind the lane's earlier ones; {@code result} completes with one result per record.
     *
     * @throws java.util.concurrent.RejectedExecutionException when the lane is shutting down
     */
    public void send(List<OutboxRecord> records, CompletableFuture<List<SendResult>> result) {
        thread.execute(new BatchTask(producer, records, result));
    }

    /**
     * Makes the lane's producer on its thread, then completes {@code done} (also when that failed).
     *
     * @throws java.util.concurrent.RejectedExecutionException when the lane is shutting down
     */
    public void prepare(CompletableFuture<Void> done) {
        thread.execute(() -> {
            try {
                producer.prepare();
            } finally {
                done.complete(null);
            }
        });
    }

    /** Takes no more batches; the queued ones still run. */
    public void shutdown() {
        thread.shutdown();
    }

    public boolean awaitTermination(long nanos) throws InterruptedException {
        return thread.awaitTermination(nanos, TimeUnit.NANOSECONDS);
    }

    /** Interrupts the running batch, answers the queued ones {@code UNAVAILABLE}, and closes the producer now. */
    public void forceStop() {
        for (Runnable r : thread.shutdownNow()) {
            if (r instanceof BatchTask task) {
                task.dropped();
            }
        }
        // a producer closed now unblocks a lane thread waiting in commit or abort
        producer.closeProducer(Duration.ZERO);
    }

    /** Stops the thread and closes the producer within {@code timeout}. */
    public void close(Duration timeout) {
        thread.shutdownNow();
        producer.closeProducer(timeout);
    }

    @Override
    public String toString() {
        return producer.toString();
    }

    /** A queued batch; if close() drops it before it ran, its stage still completes. */
    private record BatchTask(LaneProducer lane, List<OutboxRecord> batch, CompletableFuture<List<SendResult>> result)
            implements Runnable {
        @Override
        public void run() {
            try {
                result.complete(lane.sendBatch(batch));
            } catch (Throwable t) {
                result.completeExceptionally(t);
            }
        }

        void dropped() {
            OutboxException cause = new OutboxException("KafkaTransport closed before the batch was sent", null, true);
            List<SendResult> results = new ArrayList<>(batch.size());
            batch.forEach(r -> results.add(SendResult.unavailable(cause)));
            result.complete(results);
        }
    }
}
