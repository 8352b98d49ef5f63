package io.txoutbox.spi;

import io.txoutbox.OutboxException;

/**
 * The cause of an {@link SendResult.Kind#UNAVAILABLE} result that concerns one broker partition only, while the
 * broker itself answers (a partition without a leader, or with fewer in-sync replicas than it needs). The relay backs
 * off the record's key, counts no attempt and does not count the batch as an outage: the lane goes on with its other
 * keys. A transport reports it only when it has seen other partitions accept records.
 */
public class PartitionUnavailableException extends OutboxException {

    private static final long serialVersionUID = 1L;

    private final String partition;

    /**
     * @param partition the partition's name as the transport knows it (Kafka: {@code topic-3})
     * @param message   what is wrong and since when; never contains the payload
     * @param cause     the broker's error, if any
     */
    public PartitionUnavailableException(String partition, String message, Throwable cause) {
        super(message, cause, true);
        this.partition = partition;
    }

    /** The partition, e.g. {@code orders-3}. */
    public String partition() {
        return partition;
    }
}
