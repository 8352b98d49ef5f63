package io.txoutbox.kafka;

import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;
import org.apache.kafka.common.record.internal.FileLogInputStream.FileChannelRecordBatch;
import org.apache.kafka.common.record.internal.FileRecords;

/**
 * The record batches the broker appended, read from its segment files: what the producer actually sent as one unit,
 * which a consumer cannot see.
 */
final class LogBatches {

    /** One appended record batch of a partition. */
    record Batch(int partition, long baseOffset, long lastOffset, long producerId, int baseSequence,
            int lastSequence) {
    }

    private LogBatches() {
    }

    /** Every data batch of {@code topic} in the broker's log dir, per partition, in offset order. */
    static Map<Integer, List<Batch>> read(Path logDir, String topic) {
        Map<Integer, List<Batch>> out = new TreeMap<>();
        try (Stream<Path> dirs = Files.list(logDir)) {
            for (Path dir : dirs.toList()) {
                String name = dir.getFileName().toString();
                int dash = name.lastIndexOf('-');
                if (dash <= 0 || !name.substring(0, dash).equals(topic) || !Files.isDirectory(dir)) {
                    continue;
                }
                int partition = Integer.parseInt(name.substring(dash + 1));
                List<Batch> batches = out.computeIfAbsent(partition, p -> new ArrayList<>());
                try (Stream<Path> files = Files.list(dir)) {
                    for (Path segment : files.filter(f -> f.toString().endsWith(".log")).sorted().toList()) {
                        batches.addAll(read(partition, segment.toFile()));
                    }
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException("could not read the log of " + topic + " under " + logDir, e);
        }
        return out;
    }

    private static List<Batch> read(int partition, File segment) throws IOException {
        List<Batch> batches = new ArrayList<>();
        try (FileRecords records = FileRecords.open(segment, false)) {
            for (FileChannelRecordBatch b : records.batches()) {
                if (!b.isControlBatch()) {
                    batches.add(new Batch(partition, b.baseOffset(), b.lastOffset(), b.producerId(),
                            b.baseSequence(), b.lastSequence()));
                }
            }
        }
        return batches;
    }

    /** The batches appended after {@code before} was read: those past each partition's last batch then. */
    static Map<Integer, List<Batch>> since(Map<Integer, List<Batch>> before, Map<Integer, List<Batch>> now) {
        Map<Integer, List<Batch>> out = new TreeMap<>();
        now.forEach((partition, batches) -> {
            List<Batch> old = before.getOrDefault(partition, List.of());
            long next = old.isEmpty() ? Long.MIN_VALUE : old.get(old.size() - 1).lastOffset();
            List<Batch> added = batches.stream().filter(b -> b.baseOffset() > next).toList();
            if (!added.isEmpty()) {
                out.put(partition, added);
            }
        });
        return out;
    }
}
