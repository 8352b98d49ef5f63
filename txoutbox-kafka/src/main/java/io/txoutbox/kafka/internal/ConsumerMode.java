package io.txoutbox.kafka.internal;

import java.time.Duration;
import java.util.Collection;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.common.TopicPartition;

/**
 * What the inbox consumer does with a poll's records: store them for an inbox worker ({@link StoreMode}) or run the
 * handler on them ({@link HandleMode}). The {@link ConsumerLoop} polls, calls {@link #process} on its own thread, and
 * reads a batch again when it throws.
 */
interface ConsumerMode {

    /** "store" or "handle", for the start-up line. */
    String name();

    /**
     * The batch, done: effects committed in the database, then the offsets committed through {@code loop}. A throw
     * means nothing of it counts as done.
     */
    void process(ConsumerRecords<byte[], byte[]> records, ConsumerLoop loop) throws Exception;

    /** Before each poll; handle mode resumes the partitions whose retry is due. */
    default void beforePoll(ConsumerLoop loop) {
    }

    /** The longest the next poll may wait; handle mode shortens it to the next retry. */
    default Duration pollTimeout(Duration configured) {
        return configured;
    }

    /** The partitions were revoked or lost: whatever the mode keeps about them goes. */
    default void forget(Collection<TopicPartition> partitions) {
    }
}
