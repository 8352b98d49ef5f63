package io.txoutbox.micrometer;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.DistributionSummary;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tag;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.Timer;
import io.txoutbox.RelayConfig;
import io.txoutbox.spi.RelayListener;
import io.txoutbox.spi.SendResult;
import java.time.Duration;
import java.util.EnumMap;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * The polling relay's metrics as Micrometer meters (Micrometer on the classpath):
 *
 * <pre>{@code
 * PollingRelay relay = PollingRelay.builder()...
 *         .listener(new MicrometerRelayListener(registry))
 *         .build().start();
 * }</pre>
 *
 * <table>
 *   <caption>meters, all tagged {@code relay} (the relay's name)</caption>
 *   <tr><td>{@value #PUBLISHED}</td><td>counter, + {@code topic}</td><td>events published and marked</td></tr>
 *   <tr><td>{@value #COMMIT_TO_ACK}</td><td>timer with histogram</td><td>commit of the writing transaction to the
 *       broker's acknowledgement, per event</td></tr>
 *   <tr><td>{@value #FAILURES}</td><td>counter, + {@code kind}</td><td>events not delivered, by kind:
 *       {@code permanent} (serialisation, size, invalid topic), {@code retriable} and {@code unavailable} (broker),
 *       {@code collateral} (sent again with a failed one); and {@code database}: a lane's loop failed</td></tr>
 *   <tr><td>{@value #PARKED}</td><td>counter</td><td>keys parked by this relay</td></tr>
 *   <tr><td>{@value #DEAD}</td><td>counter</td><td>events dead-lettered by this relay</td></tr>
 *   <tr><td>{@value #BATCH_SIZE}</td><td>summary</td><td>events per batch</td></tr>
 *   <tr><td>{@value #BATCH_DURATION}</td><td>timer, + {@code phase}</td><td>{@code claim}, {@code send},
 *       {@code mark}</td></tr>
 * </table>
 *
 * One listener per relay. Gauges of the table (pending, event age, parked keys, dead events) come from
 * {@link OutboxMeterBinder}.
 */
public final class MicrometerRelayListener implements RelayListener {

    public static final String PUBLISHED = "txoutbox.relay.published";
    public static final String COMMIT_TO_ACK = "txoutbox.relay.commit.to.ack";
    public static final String FAILURES = "txoutbox.relay.failures";
    public static final String PARKED = "txoutbox.relay.parked";
    public static final String DEAD = "txoutbox.relay.dead";
    public static final String BATCH_SIZE = "txoutbox.relay.batch.size";
    public static final String BATCH_DURATION = "txoutbox.relay.batch.duration";

    private final MeterRegistry registry;
    private final Tags extraTags;
    private volatile Meters meters;

    public MicrometerRelayListener(MeterRegistry registry) {
        this(registry, Tags.empty());
    }

    /** With tags added to every meter (e.g. an application or region tag your registry does not add itself). */
    public MicrometerRelayListener(MeterRegistry registry, Iterable<Tag> extraTags) {
        this.registry = Objects.requireNonNull(registry, "registry");
        this.extraTags = Tags.of(Objects.requireNonNull(extraTags, "extraTags"));
    }

    /** All meters of one relay, made once at its start. */
    private static final class Meters {
        final MeterRegistry registry;
        final Tags tags;
        final Map<String, Counter> published = new ConcurrentHashMap<>();
        final Timer commitToAck;
        final Map<SendResult.Kind, Counter> failures = new EnumMap<>(SendResult.Kind.class);
        final Counter databaseFailures;
        final Counter parked;
        final Counter dead;
        final DistributionSummary batchSize;
        final Timer claim;
        final Timer send;
        final Timer mark;

        Meters(MeterRegistry registry, Tags tags) {
            this.registry = registry;
            this.tags = tags;
            this.commitToAck = Timer.builder(COMMIT_TO_ACK).tags(tags)
                    .description("From the commit of an event's transaction (track_commit_timestamp=on; otherwise "
                            + "from the relay's claim of the event) to the broker's acknowledgement")
                    .publishPercentileHistogram().minimumExpectedValue(Duration.ofMillis(1))
                    .maximumExpectedValue(Duration.ofMinutes(10)).register(registry);
            for (SendResult.Kind kind : SendResult.Kind.values()) {
                failures.put(kind, failureCounter(kind.name().toLowerCase(Locale.ROOT)));
            }
            this.databaseFailures = failureCounter("database");
            this.parked = Counter.builder(PARKED).tags(tags).description("Keys parked by the relay")
                    .register(registry);
            this.dead = Counter.builder(DEAD).tags(tags).description("Events dead-lettered by the relay")
                    .register(registry);
            this.batchSize = DistributionSummary.builder(BATCH_SIZE).tags(tags).baseUnit("events")
                    .description("Events per relay batch").register(registry);
            this.claim = phase("claim");
            this.send = phase("send");
            this.mark = phase("mark");
        }

        private Counter failureCounter(String kind) {
            return Counter.builder(FAILURES).tags(tags).tag("kind", kind)
                    .description("Events the transport did not deliver, by kind; kind=database: relay loop errors")
                    .register(registry);
        }

        private Timer phase(String phase) {
            return Timer.builder(BATCH_DURATION).tags(tags).tag("phase", phase)
                    .description("Time per relay batch in claim (database), send (transport) and mark (database)")
                    .register(registry);
        }

        Counter published(String topic) {
            Counter c = published.get(topic);
            if (c == null) {
                c = published.computeIfAbsent(topic, t -> Counter.builder(PUBLISHED).tags(tags).tag("topic", t)
                        .description("Events published and marked").register(registry));
            }
            return c;
        }
    }

    @Override
    public void relayStarted(RelayConfig config) {
        meters = new Meters(registry, extraTags.and("relay", config.name()));
    }

    @Override
    public void batchCompleted(int size, long claimNanos, long sendNanos, long markNanos) {
        Meters m = meters;
        if (m != null) {
            m.batchSize.record(size);
            m.claim.record(claimNanos, TimeUnit.NANOSECONDS);
            m.send.record(sendNanos, TimeUnit.NANOSECONDS);
            m.mark.record(markNanos, TimeUnit.NANOSECONDS);
        }
    }

    @Override
    public void published(String topic, long commitToAckNanos) {
        Meters m = meters;
        if (m != null) {
            m.published(topic).increment();
            m.commitToAck.record(commitToAckNanos, TimeUnit.NANOSECONDS);
        }
    }

    @Override
    public void sendFailed(String topic, SendResult.Kind kind) {
        Meters m = meters;
        if (m != null) {
            m.failures.get(kind).increment();
        }
    }

    @Override
    public void keyParked(String topic) {
        Meters m = meters;
        if (m != null) {
            m.parked.increment();
        }
    }

    @Override
    public void deadLettered(String topic) {
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
