package io.txoutbox;

import io.txoutbox.internal.MessageRules;
import io.txoutbox.internal.relay.DefaultOutboxReplay;
import io.txoutbox.spi.Transport;
import java.time.Duration;
import java.time.Instant;
import java.util.Objects;
import javax.sql.DataSource;

/**
 * Publishes a range of already published events again, for consumers that rebuild a read model: to their own topics
 * or to another one, in outbox id order (so per key in the original order), at a bounded rate, streaming the range
 * page by page, and resumable: the progress is kept under the replay's name, and running a replay with the same name
 * again goes on where the last run stopped. The live stream is not touched ({@code state} and {@code published_at}
 * stay as they are), and the relays keep running.
 *
 * <pre>{@code
 * OutboxReplay replay = OutboxReplay.builder()
 *         .dataSource(dataSource).schema(OutboxSchema.defaults())
 *         .transport(KafkaTransport.builder().bootstrapServers("kafka:9092").build())
 *         .name("orders-rebuild-2026-11")          // run it again after an interruption: it resumes
 *         .aggregateType("Order").createdBetween(from, to)
 *         .toTopic("orders-rebuild")               // default: each event's own topic
 *         .maxRate(5_000)
 *         .build();
 * OutboxReplay.Result result = replay.run();       // blocks until the range is through
 * }</pre>
 *
 * <p>Replayed records keep their {@code event_id} and carry the header {@value #REPLAY_HEADER} with the replay's
 * name. A consumer that dedupes by event id skips them — to rebuild, consume under a new consumer name (or clear its
 * dedupe rows); a consumer that checks aggregate versions still sees them in order. Only {@code PUBLISHED} events are
 * replayed, up to the last id that existed when the replay was first started.
 */
public interface OutboxReplay {

    /** The Kafka header (and {@code OutboxRecord} header) that marks a replayed record; its value is the name. */
    String REPLAY_HEADER = "txoutbox_replay";

    static Builder builder() {
        return new Builder();
    }

    /**
     * Runs (or resumes) the replay until its range is through, the thread is interrupted, or {@link #stop()} is
     * called; every page is checkpointed after the transport acknowledged it, so an interrupted replay resends at
     * most one page when resumed. Throws {@link OutboxException} when another run of the same name is active, or the
     * name was used with another filter.
     */
    Result run();

    /** Asks a running {@link #run()} to stop after the page in flight (it returns a result with done = false). */
    void stop();

    /** The replay's progress as stored, or null when it was never started. */
    Result progress();

    /** Forgets the stored progress of this name, so the next run starts from the beginning of the range. */
    void reset();

    /**
     * What a run did, or the stored progress: events sent, events skipped because the transport refused them for
     * good (each logged with its event id), the last outbox id sent, the end of the range, and whether it is done.
     */
    record Result(String name, long replayed, long skipped, long lastId, long upToId, boolean done,
            Duration elapsed) {
    }

    final class Builder {
        DataSource dataSource;
        OutboxSchema schema = OutboxSchema.defaults();
        Transport transport;
        String name;
        String toTopic;
        String topic;
        String aggregateType;
        String aggregateId;
        String eventType;
        Instant createdFrom;
        Instant createdTo;
        long idFrom = 1;
        long idTo = Long.MAX_VALUE;
        double maxRate;
        int batchSize = 1_000;
        Duration sendTimeout = Duration.ofSeconds(30);
        Duration retryBackoffMax = Duration.ofSeconds(5);

        private Builder() {
        }

        public Builder dataSource(DataSource dataSource) {
            this.dataSource = dataSource;
            return this;
        }

        public Builder schema(OutboxSchema schema) {
            this.schema = schema;
            return this;
        }

        /** Where the records go; the replay closes it when {@link #run()} returns. */
        public Builder transport(Transport transport) {
            this.transport = transport;
            return this;
        }

        /** The replay's name: its checkpoint, its transport lane, and the value of the replay header. Required. */
        public Builder name(String name) {
            this.name = name;
            return this;
        }

        /** Send every record to this topic instead of its own. */
        public Builder toTopic(String topic) {
            this.toTopic = topic;
            return this;
        }

        /** Only events of this (original) topic. */
        public Builder topic(String topic) {
            this.topic = topic;
            return this;
        }

        public Builder aggregateType(String aggregateType) {
            this.aggregateType = aggregateType;
            return this;
        }

        public Builder aggregateId(String aggregateId) {
            this.aggregateId = aggregateId;
            return this;
        }

        public Builder eventType(String eventType) {
            this.eventType = eventType;
            return this;
        }

        /** Only events written in {@code [from, to)} ({@code created_at}, the writing transaction's start). */
        public Builder createdBetween(Instant from, Instant to) {
            this.createdFrom = from;
            this.createdTo = to;
            return this;
        }

        /** Only events with outbox ids in {@code [from, to]}. */
        public Builder idBetween(long from, long to) {
            this.idFrom = from;
            this.idTo = to;
            return this;
        }

        /** Events per second at most (default: unlimited). */
        public Builder maxRate(double eventsPerSecond) {
            this.maxRate = eventsPerSecond;
            return this;
        }

        /** Events per page: read, sent as one batch, checkpointed (default 1,000). */
        public Builder batchSize(int batchSize) {
            this.batchSize = batchSize;
            return this;
        }

        /** Longest wait for one page's acknowledgements before it is sent again (default 30 s). */
        public Builder sendTimeout(Duration sendTimeout) {
            this.sendTimeout = sendTimeout;
            return this;
        }

        public OutboxReplay build() {
            if (dataSource == null) {
                throw new InvalidConfigurationException("replay.dataSource is required");
            }
            if (transport == null) {
                throw new InvalidConfigurationException("replay.transport is required: where should the events go?");
            }
            Objects.requireNonNull(schema, "schema");
            if (name == null || !name.matches("[a-zA-Z0-9._-]{1,100}")) {
                throw new InvalidConfigurationException("replay.name must be 1 to 100 characters of [a-zA-Z0-9._-] "
                        + "(it names the checkpoint and the header value), was '" + name + "'");
            }
            if (toTopic != null && !MessageRules.isValidTopic(toTopic)) {
                throw new InvalidConfigurationException("replay.toTopic '" + toTopic
                        + "' is not a valid Kafka topic name (1 to 249 characters from [a-zA-Z0-9._-], not '.' or '..')");
            }
            if (batchSize < 1 || batchSize > 100_000) {
                throw new InvalidConfigurationException("replay.batchSize must be between 1 and 100000, was "
                        + batchSize);
            }
            if (maxRate < 0 || Double.isNaN(maxRate)) {
                throw new InvalidConfigurationException("replay.maxRate must be >= 0 (0 = unlimited), was " + maxRate);
            }
            if (idFrom > idTo) {
                throw new InvalidConfigurationException("replay.idBetween: from " + idFrom + " is after to " + idTo);
            }
            if ((createdFrom == null) != (createdTo == null)
                    || (createdFrom != null && !createdFrom.isBefore(createdTo))) {
                throw new InvalidConfigurationException("replay.createdBetween needs from before to, was " + createdFrom
                        + " .. " + createdTo);
            }
            if (sendTimeout == null || sendTimeout.isNegative() || sendTimeout.isZero()) {
                throw new InvalidConfigurationException("replay.sendTimeout must be > 0, was " + sendTimeout);
            }
            return new DefaultOutboxReplay(this);
        }

        // read by the implementation
        public DataSource dataSource() {
            return dataSource;
        }

        public OutboxSchema schema() {
            return schema;
        }

        public Transport transport() {
            return transport;
        }

        public String name() {
            return name;
        }

        public String toTopic() {
            return toTopic;
        }

        public String topic() {
            return topic;
        }

        public String aggregateType() {
            return aggregateType;
        }

        public String aggregateId() {
            return aggregateId;
        }

        public String eventType() {
            return eventType;
        }

        public Instant createdFrom() {
            return createdFrom;
        }

        public Instant createdTo() {
            return createdTo;
        }

        public long idFrom() {
            return idFrom;
        }

        public long idTo() {
            return idTo;
        }

        public double maxRate() {
            return maxRate;
        }

        public int batchSize() {
            return batchSize;
        }

        public Duration sendTimeout() {
            return sendTimeout;
        }

        public Duration retryBackoffMax() {
            return retryBackoffMax;
        }
    }
}
