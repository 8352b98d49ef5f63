package io.txoutbox.bench;

import io.txoutbox.OutboxSchema;
import io.txoutbox.PollingRelay;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The drain's contender of txoutbox's PollingRelay with the Kafka transport: one or several instances built with
 * {@code PollingRelay.builder()}, or whatever relays a {@link RelayFactory} starts (the Spring Boot starter's, in
 * {@code bench spring-drain}); everything around them (backlog, warm-up, timing, cost window) is the same.
 */
final class DrainRelayContender implements DrainBench.Contender {

    private static final Logger log = LoggerFactory.getLogger(DrainRelayContender.class);

    /** Starts the relays of one timed drain. */
    @FunctionalInterface
    interface RelayFactory {
        /**
         * Relays of the group {@code name} on {@code schema}, started; the first one's transport wrapped in the
         * returned {@link TimedTransport}.
         */
        Relays start(String name, OutboxSchema schema) throws Exception;
    }

    /** The started relays, the timer around the first one's transport, and what stops them all. */
    record Relays(List<PollingRelay> group, TimedTransport timed, AutoCloseable stop) {
    }

    private final DrainRun d;
    private final String name;
    private final int lanes;
    private final RelayFactory factory;
    private final Progress progress;

    DrainRelayContender(DrainRun d, int instances, int lanes, int batchSize) {
        this(d, name(instances, lanes, batchSize), lanes, core(d, instances, lanes, batchSize), Progress.ROWS);
    }

    /** Core's relays on the {@code progress} model, named for it. */
    DrainRelayContender(DrainRun d, int instances, int lanes, int batchSize, Progress progress) {
        this(d, name(instances, lanes, batchSize) + " progress=" + progress.label(), lanes,
                core(d, instances, lanes, batchSize), progress);
    }

    DrainRelayContender(DrainRun d, String name, int lanes, RelayFactory factory) {
        this(d, name, lanes, factory, Progress.ROWS);
    }

    private DrainRelayContender(DrainRun d, String name, int lanes, RelayFactory factory, Progress progress) {
        this.d = d;
        this.name = name;
        this.lanes = lanes;
        this.factory = factory;
        this.progress = progress;
    }

    private static String name(int instances, int lanes, int batchSize) {
        return "relay " + (instances > 1 ? "instances=" + instances + " " : "") + "lanes=" + lanes + " batch="
                + batchSize;
    }

    /** Relays as an application builds them with core's builder, each instance with its own transport. */
    static RelayFactory core(DrainRun d, int instances, int lanes, int batchSize) {
        return (name, schema) -> {
            TimedTransport timed = new TimedTransport(KafkaTransports.create(d.env().bootstrapServers(),
                    ProducerSettings.effective(d.common()), d.common()));
            // instances of one relay group: the same name, each with its own transport (as separate processes)
            List<PollingRelay> group = new ArrayList<>();
            for (int i = 0; i < instances; i++) {
                group.add(PollingRelay.builder().dataSource(d.env().relayDataSource())
                        .transport(i == 0 ? timed : KafkaTransports.create(d.env().bootstrapServers(),
                                ProducerSettings.effective(d.common()), d.common()))
                        .schema(schema).name(name).lanes(lanes).batchSize(batchSize).build().start());
            }
            return new Relays(group, timed, () -> group.forEach(PollingRelay::close));
        };
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public DrainBench.Result run(String id) throws Exception {
        String topic = "drain-" + id;
        d.env().createTopic(topic, Map.of());
        OutboxSchema schema = Backlog.createSchema(d.env(), "bench_" + id);
        AutoCloseable model = progress.use(schema); // before the relays: they, and the readers below, take it
        Relays relays = factory.start("bench-" + id.replace('_', '-'), schema);
        List<PollingRelay> group = relays.group();
        TimedTransport timed = relays.timed();
        PollingRelay relay = group.get(0);
        try (CommittedReader reader = new CommittedReader(d.env().bootstrapServers(), topic, null)) {
            long spread = System.nanoTime() + Duration.ofSeconds(30).toNanos();
            while (!shared(group) && System.nanoTime() < spread) {
                Thread.sleep(50); // membership settles within a couple of seconds
            }
            RelayWarmUp.run(d.env(), group, schema, d.gen(), topic + "-warm");
            reader.awaitReady();
            AtomicReference<CostWindow> cw = new AtomicReference<>();
            long[] before = new long[2]; // published, batches at the window's start
            Backlog.Written w = Backlog.write(d.env(), schema, d.gen(), topic, d.events(), () -> {
                cw.set(CostWindow.open(d.env(), schema));
                before[0] = RelayWarmUp.published(group);
                before[1] = batches(group);
            });
            timed.reset();
            long batches0 = batches(group);
            String lsn0 = d.env().walLsn();
            long t0 = System.nanoTime();
            group.forEach(PollingRelay::nudge);
            long deadline = t0 + d.timeout(d.events()).toNanos();
            while (RelayWarmUp.published(group) < RelayWarmUp.EVENTS + d.events()) {
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException("relay published " + RelayWarmUp.published(group) + " of "
                            + d.events());
                }
                Thread.sleep(0, 500_000);
            }
            long tMarked = System.nanoTime();
            long batches = batches(group) - batches0;
            DrainBench.Anatomy anatomy = new DrainBench.Anatomy(batches, (tMarked - t0) / 1e6 * lanes / batches,
                    timed.meanMillis(), timed.maxMillis());
            long tRead = reader.awaitCount(d.events(), d.timeout(d.events()));
            if (!reader.reachedEndOffsets()) {
                log.warn("  relay: reader at {} records but not at the end offsets: {}", reader.count(),
                        reader.positions());
            }
            long t1 = Math.max(tMarked, tRead);
            // the rate is the delivery's; the cursor model's last advances (a settlement after the last batch) are
            // inside the cost window, which closes once the table says every event is published
            Backlog.awaitNonePending(d.env(), schema, Duration.ofSeconds(30));
            long tPublished = System.nanoTime();
            long wal = d.env().walBytesBetween(lsn0, d.env().walLsn());
            // the relay's sessions flush their table counters within a second while they poll
            CostReport cost = cw.get().close(RelayWarmUp.published(group) - before[0], batches(group) - before[1],
                    d.events(), w.walBytes(), 1200);
            log.info("  marked at {} ms, read at {} ms, published in the table at {} ms, {}; {}; relay {} µs/event",
                    (tMarked - t0) / 1_000_000, (tRead - t0) / 1_000_000, (tPublished - t0) / 1_000_000,
                    relay.stats(), anatomy, Stats.fmt(cost.relayMicrosPerEvent()));
            return new DrainBench.Result(d.events(), (t1 - t0) / 1e9, wal, w.walBytes(), w.seconds(),
                    reader.reachedEndOffsets(), Backlog.notPublished(d.env(), schema), anatomy, cost);
        } finally {
            relays.stop().close();
            model.close();
            Backlog.dropSchema(d.env(), schema);
            d.env().deleteTopic(topic);
            d.env().deleteTopic(topic + "-warm");
        }
    }

    /** Every lane owned, and by every instance its share. */
    private static boolean shared(List<PollingRelay> group) {
        int owned = 0;
        for (PollingRelay r : group) {
            if (r.stats().lanesOwned() == 0) {
                return false;
            }
            owned += r.stats().lanesOwned();
        }
        return owned == group.get(0).config().lanes();
    }

    private static long batches(List<PollingRelay> group) {
        long sum = 0;
        for (PollingRelay r : group) {
            sum += r.stats().batches();
        }
        return sum;
    }
}
