package io.txoutbox.kafka;

import java.io.IOException;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/** Reads a topic back the way a correct consumer of the outbox does: read_committed. */
final class ReadBack {

    private ReadBack() {
    }

    /** Everything a read_committed consumer sees in the topic, read up to the last stable offset. */
    static List<ConsumerRecord<byte[], byte[]>> readCommitted(String bootstrapServers, String topic) {
        Map<String, Object> props = Map.of(
                ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers,
                ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed",
                ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        try (KafkaConsumer<byte[], byte[]> consumer =
                new KafkaConsumer<>(props, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            List<TopicPartition> partitions = new ArrayList<>();
            for (PartitionInfo p : consumer.partitionsFor(topic, Duration.ofSeconds(10))) {
                partitions.add(new TopicPartition(topic, p.partition()));
            }
            consumer.assign(partitions);
            consumer.seekToBeginning(partitions);
            List<ConsumerRecord<byte[], byte[]>> records = new ArrayList<>();
            long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
            // The last stable offset moves only when the commit markers are written, which happens just after
            // commitTransaction returns: read until the end offsets stayed put for a moment and were reached.
            long stableSince = 0;
            Map<TopicPartition, Long> lastEnd = Map.of();
            while (true) {
                Map<TopicPartition, Long> end = consumer.endOffsets(partitions);
                boolean reached = partitions.stream().allMatch(tp -> consumer.position(tp) >= end.get(tp));
                if (reached && end.equals(lastEnd)) {
                    if (stableSince == 0) {
                        stableSince = System.nanoTime();
                    } else if (System.nanoTime() - stableSince > Duration.ofMillis(500).toNanos()) {
                        return records;
                    }
                } else {
                    stableSince = 0;
                }
                lastEnd = end;
                if (System.nanoTime() > deadline) {
                    throw new AssertionError("could not read " + topic + " up to " + end + " within 20 s");
                }
                consumer.poll(Duration.ofMillis(100)).forEach(records::add);
            }
        }
    }

    /** A port nothing listens on: the OS hands it out, the probe socket is closed again. */
    static int closedPort() throws IOException {
        try (ServerSocket socket = new ServerSocket(0)) {
            return socket.getLocalPort();
        }
    }
}
