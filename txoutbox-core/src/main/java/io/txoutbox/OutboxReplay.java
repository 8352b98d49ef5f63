package io.txoutbox;

import io.txoutbox.internal.config.Checks;
import io.txoutbox.internal.relay.DefaultOutboxReplay;
import io.txoutbox.spi.Transport;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.UUID;
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
 *
 * <p><b>Events that are not published yet.</b> A range can hold events the relay has not published: a parked key's,
 * one backing off, a batch in flight, or one whose transaction commits late (its id was drawn before the replay's
 * start but it commits after). None is passed silently. First, every run waits until every id up to the range's end
 * is settled (committed or rolled back) — the relay's claim-floor rule: the writer transactions that may still
 * commit such ids are waited for. Then, at an event that is {@code PENDING} or {@code PARKED}, the replay does what
 * {@link Builder#whenUnpublished} says: {@link WhenUnpublished#WAIT} (default) stops there and waits until the
 * event is published (then replays it, in order), or dead or discarded (then reports it); after
 * {@link Builder#waitTimeout} it returns {@link Outcome#WAIT_TIMED_OUT} with the event it waits for, and a later run
 * of the same name resumes right there. {@link WhenUnpublished#REPORT} goes past such events and lists them in
 * {@link Result#skippedEvents()}. Events that are final but were not published — dead ({@code DEAD}: dead-lettered,
 * so the live consumers never got them on their topic either) or {@code DISCARDED} by an operator — are not replayed
 * in either mode, and reported.
 */
public interface OutboxReplay {

    /** The Kafka header (and {@code OutboxRecord} header) that marks a replayed record; its value is the name. */
    String REPLAY_HEADER = "txoutbox_replay";

    /** A rebuilt read model must not miss events: by default a replay waits for the ones not published yet. */
    WhenUnpublished DEFAULT_WHEN_UNPUBLISHED = ReplayConfig.DEFAULT_WHEN_UNPUBLISHED;
    /** The longest a run waits for one event (or for the range's writers to settle) before it returns. */
    Duration DEFAULT_WAIT_TIMEOUT = ReplayConfig.DEFAULT_WAIT_TIMEOUT;
    /** How many skipped events a result lists one by one; {@link Result#skipped()} counts all of them. */
    int MAX_REPORTED = 1_000;

    /** What a replay does at an event of its range that is not published yet ({@code PENDING} or {@code PARKED}). */
    enum WhenUnpublished {
        /**
         * Stop at the event and wait until it is final: published (it is replayed, in order) or dead or discarded (it
         * is reported). Each wait is bounded by {@link Builder#waitTimeout}; when it runs out the run returns
         * {@link Outcome#WAIT_TIMED_OUT} and the next run of the name resumes at that event.
         */
        WAIT,
        /** Go past the event and report it in {@link Result#skippedEvents()}; the replay does not wait. */
        REPORT
    }

    /** How a run ended. */
    enum Outcome {
        /** The whole range is through: every event was replayed or is reported. */
        DONE,
        /** {@link #stop()} or an interrupt ended the run; run again to resume. */
        STOPPED,
        /**
         * An event stayed unpublished for {@link Builder#waitTimeout} ({@link Result#waitingFor()} says which), or
         * writer transactions that may still commit ids in the range did not end in that time (waitingFor is null);
         * the progress up to there is kept, run again to resume.
         */
        WAIT_TIMED_OUT
    }

    /** Why an event of the range was not replayed. */
    enum SkipReason {
        /** {@code PENDING} or {@code PARKED} when the replay went by ({@link WhenUnpublished#REPORT}). */
        NOT_PUBLISHED,
        /** Dead ({@code DEAD}): it went to the dead-letter topic, never to its own topic. */
        DEAD,
        /** An operator discarded it. */
        DISCARDED,
        /** The transport refused it for good (e.g. too large for the target topic). */
        REFUSED
    }

    /** An event of the range that was not replayed: its ids, its state when the replay went by, and why. */
    record Skipped(UUID eventId, long id, String topic, String state, SkipReason reason) {
    }

    /** The validated configuration this replay runs with. */
    ReplayConfig config();

    static Builder builder() {
        return new Builder();
    }

    /**
     * Runs (or resumes) the replay until its range is through, the thread is interrupted, {@link #stop()} is
     * called, or a wait for an unpublished event runs out ({@link Result#outcome()} says which); every page is
     * checkpointed after the transport acknowledged it, so an interrupted replay resends at most one page when
     * resumed. Throws {@link OutboxException} when another run of the same name is active, or the
     * name was used with another filter.
     */
    Result run();

    /** Asks a running {@link #run()} to stop after the page in flight, or its wait (it returns {@link Outcome#STOPPED}). */
    void stop();

    /** The replay's progress as stored, or null when it was never started. */
    Result progress();

    /** Forgets the stored progress of this name, so the next run starts from the beginning of the range. */
    void reset();

    /**
     * What a run did, or the stored progress. {@code replayed} and {@code skipped} count the whole replay (all its
     * runs, as stored); {@code skippedEvents} lists the events this run skipped, in id order, the first
     * {@value #MAX_REPORTED} of them (each is also logged with its event id; the stored progress keeps the count
     * only, so {@link #progress()} returns an empty list). {@code lastId} is the outbox id up to which the range is
     * through, {@code upToId} its end; {@code waitingFor} is the event a timed-out wait was for. In the stored
     * progress of a replay that is not done, {@code outcome} is null.
     */
    record Result(String name, long replayed, long skipped, List<Skipped> skippedEvents, long lastId, long upToId,
            boolean done, Outcome outcome, Skipped waitingFor, Duration elapsed) {
        public Result {
            skippedEvents = List.copyOf(skippedEvents);
        }
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
        long idFrom = ReplayConfig.DEFAULT_ID_FROM;
        long idTo = ReplayConfig.DEFAULT_ID_TO;
        double maxRate = ReplayConfig.DEFAULT_MAX_RATE;
        int batchSize = ReplayConfig.DEFAULT_BATCH_SIZE;
        Duration sendTimeout = ReplayConfig.DEFAULT_SEND_TIMEOUT;
        Duration retryBackoffMax = ReplayConfig.DEFAULT_RETRY_BACKOFF_MAX;
        WhenUnpublished whenUnpublished = ReplayConfig.DEFAULT_WHEN_UNPUBLISHED;
        Duration waitTimeout = ReplayConfig.DEFAULT_WAIT_TIMEOUT;

        private Builder() {
        }

        public Builder dataSource(DataSource dataSource) {
            this.dataSource = dataSource;
            return this;
        }

        /** Where the outbox is, default {@link OutboxSchema#defaults()}; {@code null} is refused here. */
        public Builder schema(OutboxSchema schema) {
            this.schema = Checks.schema("replay", schema);
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

        /**
         * What to do at an event of the range that is not published yet: {@link WhenUnpublished#WAIT} for it
         * (default) or {@link WhenUnpublished#REPORT} it and go on.
         */
        public Builder whenUnpublished(WhenUnpublished whenUnpublished) {
            this.whenUnpublished = whenUnpublished;
            return this;
        }

        /**
         * The longest one wait lasts — for an unpublished event, or for the writers that may still commit ids of the
         * range (default 10 min); then the run returns {@link Outcome#WAIT_TIMED_OUT}, resumable.
         */
        public Builder waitTimeout(Duration waitTimeout) {
            this.waitTimeout = waitTimeout;
            return this;
        }

        public OutboxReplay build() {
            if (dataSource == null) {
                throw new InvalidConfigurationException("replay.dataSource is required");
            }
            if (transport == null) {
                throw new InvalidConfigurationException("replay.transport is required: where should the events go?");
            }
            return new DefaultOutboxReplay(dataSource, transport, new ReplayConfig(schema, name, toTopic, topic,
                    aggregateType, aggregateId, eventType, createdFrom, createdTo, idFrom, idTo, maxRate, batchSize,
                    sendTimeout, retryBackoffMax, whenUnpublished, waitTimeout));
        }

        /**
         * Applies settings by their names in {@link ReplayConfig#DESCRIPTOR} ({@code "batch-size"} or
         * {@code "txoutbox.replay.batch-size"}), as text or typed values; a bad one changes nothing.
         */
        public Builder settings(java.util.Map<String, ?> settings) {
            return ReplayConfig.DESCRIPTOR.apply(this, settings);
        }

        // read by the implementation before ReplayConfig; the implementation now reads the record
        @Deprecated(forRemoval = true)
        public DataSource dataSource() {
            return dataSource;
        }

        @Deprecated(forRemoval = true)
        public OutboxSchema schema() {
            return schema;
        }

        @Deprecated(forRemoval = true)
        public Transport transport() {
            return transport;
        }

        @Deprecated(forRemoval = true)
        public String name() {
            return name;
        }

        @Deprecated(forRemoval = true)
        public String toTopic() {
            return toTopic;
        }

        @Deprecated(forRemoval = true)
        public String topic() {
            return topic;
        }

        @Deprecated(forRemoval = true)
        public String aggregateType() {
            return aggregateType;
        }

        @Deprecated(forRemoval = true)
        public String aggregateId() {
            return aggregateId;
        }

        @Deprecated(forRemoval = true)
        public String eventType() {
            return eventType;
        }

        @Deprecated(forRemoval = true)
        public Instant createdFrom() {
            return createdFrom;
        }

        @Deprecated(forRemoval = true)
        public Instant createdTo() {
            return createdTo;
        }

        @Deprecated(forRemoval = true)
        public long idFrom() {
            return idFrom;
        }

        @Deprecated(forRemoval = true)
        public long idTo() {
            return idTo;
        }

        @Deprecated(forRemoval = true)
        public double maxRate() {
            return maxRate;
        }

        @Deprecated(forRemoval = true)
        public int batchSize() {
            return batchSize;
        }

        @Deprecated(forRemoval = true)
        public Duration sendTimeout() {
            return sendTimeout;
        }

        @Deprecated(forRemoval = true)
        public Duration retryBackoffMax() {
            return retryBackoffMax;
        }

        @Deprecated(forRemoval = true)
        public WhenUnpublished whenUnpublished() {
            return whenUnpublished;
        }

        @Deprecated(forRemoval = true)
        public Duration waitTimeout() {
            return waitTimeout;
        }
    }
}
