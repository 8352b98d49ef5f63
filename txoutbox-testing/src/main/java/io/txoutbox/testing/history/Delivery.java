package io.txoutbox.testing.history;

import java.util.UUID;

/**
 * One record as read back from the topic.
 *
 * @param eventId     the event id extracted from the record, or {@code null} if it had none (counted as
 *                    "unidentified" by the checker)
 * @param key         the record key as UTF-8, or {@code null}
 * @param partition   the partition
 * @param offset      the offset within the partition
 * @param timestampMs the record's timestamp (epoch millis): the broker's append time when the topic uses
 *                    {@code LogAppendTime}, else the producer's create time — the time the event "arrived"
 */
public record Delivery(UUID eventId, String key, int partition, long offset, long timestampMs) {
}
