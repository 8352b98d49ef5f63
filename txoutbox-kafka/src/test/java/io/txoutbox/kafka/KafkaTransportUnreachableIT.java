package io.txoutbox.kafka;

import static org.assertj.core.api.Assertions.assertThat;

import io.txoutbox.spi.OutboxRecord;
import io.txoutbox.spi.SendResult;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** A broker that cannot be reached: the batch completes unavailable within max.block.ms, and close stays bounded. */
class KafkaTransportUnreachableIT {

    @Test
    void batchToAClosedPortCompletesRetriableAndCloseIsBounded() throws Exception {
        int closedPort = ReadBack.closedPort();
        long maxBlockMs = 2_000;
        List<OutboxRecord> batch = new ArrayList<>();
        for (int i = 0; i < 20; i++) {
            batch.add(TestRecords.json("orders", "k" + (i % 4), "{\"seq\":" + i + "}"));
        }
        KafkaTransport t = KafkaTransport.builder().bootstrapServers("127.0.0.1:" + closedPort)
                .property("max.block.ms", maxBlockMs).closeTimeout(Duration.ofSeconds(2)).build();
        List<SendResult> results;
        long start = System.nanoTime();
        try {
            results = t.send("0", batch).toCompletableFuture().get(maxBlockMs + 10_000, TimeUnit.MILLISECONDS);
        } finally {
            long sendMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
            assertThat(sendMs).as("batch completion time").isLessThan(maxBlockMs + 8_000); // generous: a shared 2-core machine
            long closeStart = System.nanoTime();
            t.close();
            assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - closeStart)).as("close time")
                    .isLessThan(8_000);
        }
        assertThat(results).hasSize(20).allSatisfy(r -> assertThat(r).isInstanceOfSatisfying(SendResult.Failed.class,
                f -> assertThat(f.kind()).isEqualTo(SendResult.Kind.UNAVAILABLE)));
    }

    @Test
    void closeWhileABatchWaitsForTheBrokerIsBoundedAndStillCompletesTheBatch() throws Exception {
        int closedPort = ReadBack.closedPort();
        KafkaTransport t = KafkaTransport.builder().bootstrapServers("127.0.0.1:" + closedPort)
                .property("max.block.ms", 30_000).property("request.timeout.ms", 5_000)
                .closeTimeout(Duration.ofMillis(500)).build();
        CompletableFuture<List<SendResult>> pending = t.send("0",
                List.of(TestRecords.json("orders", "k", "{}"))).toCompletableFuture();
        long closeStart = System.nanoTime();
        t.close();
        assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - closeStart)).as("close time, far below max.block.ms")
                .isLessThan(10_000);
        // the lane thread was interrupted inside initTransactions; its batch must not hang for max.block.ms
        List<SendResult> results = pending.get(5, TimeUnit.SECONDS);
        assertThat(results).singleElement().isInstanceOfSatisfying(SendResult.Failed.class,
                f -> assertThat(f.kind()).isEqualTo(SendResult.Kind.UNAVAILABLE));
    }
}
