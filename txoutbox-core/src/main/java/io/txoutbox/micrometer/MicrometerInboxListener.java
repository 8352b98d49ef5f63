package io.txoutbox.micrometer;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.DistributionSummary;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tag;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.Timer;
import io.txoutbox.InboxWorkerConfig;
import io.txoutbox.spi.InboxListener;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.TimeUnit;

/**
 * The inbox worker's metrics as Micrometer meters (Micrometer on the classpath):
 *
 * <pre>{@code
 * InboxWorker worker = InboxWorker.builder()...
 *         .listener(new MicrometerInboxListener(registry))
 *         .build().start();
 * }</pre>
 *
 * <table>
 *   <caption>meters, all tagged {@code consumer} (the worker's consumer)</caption>
 *   <tr><td>{@value #PROCESSED}</td><td>counter</td><td>events processed (handler succeeded, committed)</td></tr>
 *   <tr><td>{@value #HANDLER_DURATION}</td><td>timer</td><td>one handler's run, per processed event</td></tr>
 *   <tr><td>{@value #RECEIVE_TO_PROCESSED}</td><td>timer with histogram</td><td>from the event's
 *       {@code received_at} to the commit of its processing</td></tr>
 *   <tr><td>{@value #FAILURES}</td><td>counter, + {@code kind}</td><td>failed handler attempts, by kind:
 *       {@code transient} (retried), {@code permanent} (not retried); and {@code database}: a lane's loop
 *       failed</td></tr>
 *   <tr><td>{@value #PARKED}</td><td>counter</td><td>keys parked by this worker</td></tr>
 *   <tr><td>{@value #DEAD}</td><td>counter</td><td>events given up (dead) by this worker</td></tr>
 *   <tr><td>{@value #BATCH_SIZE}</td><td>summary</td><td>events per batch</td></tr>
 *   <tr><td>{@value #BATCH_DURATION}</td><td>timer, + {@code phase}</td><td>{@code claim}, {@code handle},
 *       {@code mark}</td></tr>
 * </table>
 *
 * One listener per worker; workers of the same consumer in one registry share the meters (their counts add up).
 * Gauges of the inbox table (pending, event age, parked keys, dead events) come from {@link InboxMeterBinder}.
 */
public final class MicrometerInboxListener implements InboxListener {

    public static final String PROCESSED = "txoutbox.inbox.processed";
    public static final String HANDLER_DURATION = "txoutbox.inbox.handler.duration";
    public static final String RECEIVE_TO_PROCESSED = "txoutbox.inbox.receive.to.processed";
    public static final String FAILURES = "txoutbox.inbox.failures";
    public static final String PARKED = "txoutbox.inbox.parked";
    public static final String DEAD = "txoutbox.inbox.dead";
    public static final String BATCH_SIZE = "txoutbox.inbox.batch.size";
    public static final String BATCH_DURATION = "txoutbox.inbox.batch.duration";

    private final MeterRegistry registry;
    private final Tags extraTags;
    private volatile Meters meters;

    public MicrometerInboxListener(MeterRegistry registry) {
        this(registry, Tags.empty());
    }

    /** With tags added to every meter (e.g. an application or region tag your registry does not add itself). */
    public MicrometerInboxListener(MeterRegistry registry, Iterable<Tag> extraTags) {
        this.registry = Objects.requireNonNull(registry, "registry");
        this.extraTags = Tags.of(Objects.requireNonNull(extraTags, "extraTags"));
    }

    /** All meters of one worker, made once at its start. */
    private static final class Meters {
        final Counter processed;
        final Timer handler;
        final Timer receiveToProcessed;
        final Counter transientFailures;
        final Counter permanentFailures;
        final Counter databaseFailures;
        final Counter parked;
        final Counter dead;
        final DistributionSummary batchSize;
        final Timer claim;
        final Timer handle;
        final Timer mark;

        Meters(MeterRegistry registry, Tags tags) {
            this.processed = Counter.builder(PROCESSED).tags(tags).description("Inbox events processed")
                    .register(registry);
            this.handler = Timer.builder(HANDLER_DURATION).tags(tags)
                    .description("One inbox handler's run, per processed event").register(registry);
            this.receiveToProcessed = Timer.builder(RECEIVE_TO_PROCESSED).tags(tags)
                    .description("From an event's received_at to the commit of its processing")
                    .publishPercentileHistogram().minimumExpectedValue(Duration.ofMillis(1))
                    .maximumExpectedValue(Duration.ofMinutes(10)).register(registry);
            this.transientFailures = failureCounter(registry, tags, "transient");
            this.permanentFailures = failureCounter(registry, tags, "permanent");
            this.databaseFailures = failureCounter(registry, tags, "database");
            this.parked = Counter.builder(PARKED).tags(tags).description("Keys parked by the inbox worker")
                    .register(registry);
            this.dead = Counter.builder(DEAD).tags(tags).description("Events given up by the inbox worker")
                    .register(registry);
            this.batchSize = DistributionSummary.builder(BATCH_SIZE).tags(tags).baseUnit("events")
                    .description("Events per inbox batch").register(registry);
            this.claim = phase(registry, tags, "claim");
            this.handle = phase(registry, tags, "handle");
            this.mark = phase(registry, tags, "mark");
        }

        private static Counter failureCounter(MeterRegistry registry, Tags tags, String kind) {
            return Counter.builder(FAILURES).tags(tags).tag("kind", kind)
                    .description("Failed inbox handler attempts, by kind; kind=database: worker loop errors")
                    .register(registry);
        }

        private static Timer phase(MeterRegistry registry, Tags tags, String phase) {
            return Timer.builder(BATCH_DURATION).tags(tags).tag("phase", phase)
                    .description("Time per inbox batch in claim (database), handle (handlers) and mark (database)")
                    .register(registry);
        }
    }

    @Override
    public void workerStarted(InboxWorkerConfig config) {
        meters = new Meters(registry, extraTags.and("consumer", config.consumer()));
    }

    @Override
    public void batchCompleted(int size, long claimNanos, long handleNanos, long markNanos) {
        Meters m = meters;
        if (m != null) {
            m.batchSize.record(size);
            m.claim.record(claimNanos, TimeUnit.NANOSECONDS);
            m.handle.record(handleNanos, TimeUnit.NANOSECONDS);
            m.mark.record(markNanos, TimeUnit.NANOSECONDS);
        }
    }

    @Override
    public void processed(String eventType, long handlerNanos, long receiveToProcessedNanos) {
        Meters m = meters;
        if (m != null) {
            m.processed.increment();
            m.handler.record(handlerNanos, TimeUnit.NANOSECONDS);
            m.receiveToProcessed.record(receiveToProcessedNanos, TimeUnit.NANOSECONDS);
        }
    }

    @Override
    public void handlerFailed(String eventType, FailureKind kind) {
        Meters m = meters;
        if (m != null) {
            (kind == FailureKind.PERMANENT ? m.permanentFailures : m.transientFailures).increment();
        }
    }

    @Override
    public void keyParked(String eventType) {
        Meters m = meters;
        if (m != null) {
            m.parked.increment();
        }
    }

    @Override
    public void deadLettered(String eventType) {
        Meters m = meters;
        if (m != null) {
            m.dead.increment();
        }
    }

    @Override
    public void loopFailed(Throwable error) {
        Meters m = meters;
        if (m != null) {
            m.databaseFailures.increment();
        }
    }
}
