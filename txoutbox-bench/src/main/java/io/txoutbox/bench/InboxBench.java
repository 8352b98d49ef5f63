package io.txoutbox.bench;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.txoutbox.Inbox;
import io.txoutbox.InboxHandler;
import io.txoutbox.InboxMessage;
import io.txoutbox.InboxWorker;
import io.txoutbox.InboxWorkerConfig;
import io.txoutbox.OutboxSchema;
import io.txoutbox.kafka.KafkaHeaders;
import io.txoutbox.kafka.KafkaInboxConsumer;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.UUID;
import java.util.concurrent.Callable;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;
import javax.sql.DataSource;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * The consuming side on one pre-filled topic. N records like the relay's (same key, JSON value and headers,
 * {@code event_id} a time-ordered UUID) are produced once, not timed; then every round reads the whole topic with
 * fresh consumer groups, contender after contender, in an order that rotates every round:
 * <ol>
 *   <li>a plain {@code KafkaConsumer} that only reads ({@code read_committed}, like the inbox consumer): the limit;</li>
 *   <li>{@code KafkaInboxConsumer} in store mode: every poll one database transaction into {@code inbox_event},
 *   then the offset commit;</li>
 *   <li>an {@code InboxWorker} with a no-op handler draining those N rows, started after the receive finished so it
 *   is timed alone;</li>
 *   <li>{@code Inbox.receive} alone: the store mode's database work for the same rows, no Kafka;</li>
 *   <li>{@code KafkaInboxConsumer} in handle mode, {@code Inbox.once} per record with no-op work.</li>
 * </ol>
 * A receive is timed from its first polled records (the group join is not timed) until the last record is read,
 * stored or applied; the worker from its start until it processed every row. Each contender gets a fresh schema.
 */
@Command(name = "inbox", mixinStandardHelpOptions = true,
        description = "Inbox receive (store mode), worker drain and handle mode (Inbox.once) vs a plain consumer.")
final class InboxBench implements Callable<Integer> {

    private static final Logger log = LoggerFactory.getLogger(InboxBench.class);
    static final String PLAIN = "plain KafkaConsumer (the limit)";
    static final String STORE = "KafkaInboxConsumer store mode: receive into inbox_event";
    static final String ONCE = "KafkaInboxConsumer handle mode: Inbox.once, no-op work";
    static final String RECEIVE_ONLY = "Inbox.receive alone: store mode's database work, no Kafka";

    @Mixin
    CommonOptions common;

    @Spec
    CommandSpec spec;

    @Option(names = "--events", defaultValue = "200000", description = "records on the topic (default ${DEFAULT-VALUE})")
    long events;

    @Option(names = "--rounds", defaultValue = "2", description = "rounds (default ${DEFAULT-VALUE})")
    int rounds;

    @Option(names = "--lanes", defaultValue = "" + InboxWorkerConfig.DEFAULT_LANES,
            description = "inbox worker lanes (default ${DEFAULT-VALUE})")
    int lanes;

    @Option(names = "--batch", defaultValue = "" + InboxWorkerConfig.DEFAULT_BATCH_SIZE,
            description = "inbox worker batch size (default ${DEFAULT-VALUE})")
    int batchSize;

    @Option(names = "--no-pool", description = "give the inbox contenders the unpooled data source (a new PostgreSQL "
            + "connection per batch) instead of a HikariCP pool")
    boolean noPool;

    @Option(names = "--consumer-property", description = "consumer property k=v for all three consumers (repeatable)")
    Map<String, String> consumerProperties = new LinkedHashMap<>();

    private BenchEnv env;
    /** What the inbox contenders get: a pool, as an application would give them, unless --no-pool. */
    private DataSource dataSource;
    private String topic;
    private String deadLetterTopic;

    /** One timed run: messages in seconds, over so many batches (polls or worker transactions). */
    record Run(long messages, double seconds, long batches) {
        double rate() {
            return messages / seconds;
        }
    }

    private String workerName() {
        return "InboxWorker drain, no-op handler (lanes=" + lanes + " batch=" + batchSize + ")";
    }

    @Override
    public Integer call() throws Exception {
        Events gen = new Events(common.keys, common.payloadBytes);
        String suffix = Long.toString(ThreadLocalRandom.current().nextLong(1L << 40), 36);
        topic = "inbox-bench-" + suffix;
        deadLetterTopic = topic + ".dlt";
        try (BenchEnv e = new BenchEnv(common); HikariDataSource pool = noPool ? null : pool(e)) {
            env = e;
            dataSource = pool != null ? pool : e.dataSource();
            env.createTopic(topic, Map.of());
            env.createTopic(deadLetterTopic, Map.of());
            double fillRate = fill(gen);
            Map<String, List<Run>> results = new LinkedHashMap<>();
            for (String name : List.of(PLAIN, STORE, RECEIVE_ONLY, workerName(), ONCE)) {
                results.put(name, new ArrayList<>());
            }
            List<String> order = List.of(PLAIN, STORE, RECEIVE_ONLY, ONCE);
            for (int round = 0; round < rounds; round++) {
                for (int k = 0; k < order.size(); k++) {
                    // rotate the order every round so no contender always runs first (cold) or last (warm)
                    String contender = order.get((k + round) % order.size());
                    String id = "r" + (round + 1) + "_" + k;
                    log.info("round {}/{}: {} ...", round + 1, rounds, contender);
                    switch (contender) {
                        case PLAIN -> results.get(PLAIN).add(logged(round, PLAIN, plain(id)));
                        case STORE -> {
                            Run[] storeAndDrain = storeAndDrain(id);
                            results.get(STORE).add(logged(round, STORE, storeAndDrain[0]));
                            results.get(workerName()).add(logged(round, workerName(), storeAndDrain[1]));
                        }
                        case RECEIVE_ONLY -> results.get(RECEIVE_ONLY).add(logged(round, RECEIVE_ONLY,
                                receiveOnly(id, gen)));
                        default -> results.get(ONCE).add(logged(round, ONCE, once(id)));
                    }
                }
            }
            InboxBenchReport.print(this, results, fillRate, e.describe());
        }
        return 0;
    }

    private HikariDataSource pool(BenchEnv e) {
        HikariConfig config = new HikariConfig();
        config.setDataSource(e.dataSource());
        config.setPoolName("bench-inbox");
        config.setMaximumPoolSize(lanes + 4); // the worker's lanes, a consumer, slack
        return new HikariDataSource(config);
    }

    private Run logged(int round, String name, Run r) {
        log.info("round {}/{}: {}: {} messages in {} s = {} msg/s, {} per batch", round + 1, rounds, name,
                r.messages(), String.format("%.2f", r.seconds()), Stats.fmt(r.rate()),
                Stats.fmt((double) r.messages() / Math.max(1, r.batches())));
        return r;
    }

    // ---- the topic --------------------------------------------------------------------------------------------

    /** Produces the records every contender reads; returns the produce rate (for the report, not a contender). */
    private double fill(Events gen) throws Exception {
        AtomicReference<Exception> failed = new AtomicReference<>();
        long t0 = System.nanoTime();
        try (KafkaProducer<byte[], byte[]> producer = ProducerSettings.producer(env.bootstrapServers(),
                ProducerSettings.effective(common), "bench-inbox-fill")) {
            for (long i = 0; i < events; i++) {
                producer.send(gen.record(topic, i, timeOrderedId(), gen.payload(i).getBytes(StandardCharsets.UTF_8)),
                        (md, ex) -> {
                            if (ex != null) {
                                failed.compareAndSet(null, ex);
                            }
                        });
            }
            producer.flush();
        }
        if (failed.get() != null) {
            throw new IllegalStateException("filling the topic failed", failed.get());
        }
        double rate = events / ((System.nanoTime() - t0) / 1e9);
        log.info("topic {} filled with {} records at {} records/s", topic, events, Stats.fmt(rate));
        return rate;
    }

    /** A UUIDv7 like the outbox's event ids, so the inbox's primary key sees the relay's insert pattern. */
    private static UUID timeOrderedId() {
        ThreadLocalRandom random = ThreadLocalRandom.current();
        long msb = (System.currentTimeMillis() << 16) | 0x7000L | (random.nextLong() & 0x0FFFL);
        long lsb = (random.nextLong() & 0x3FFF_FFFF_FFFF_FFFFL) | 0x8000_0000_0000_0000L;
        return new UUID(msb, lsb);
    }

    // ---- contenders -------------------------------------------------------------------------------------------

    /** Reads every record and touches its value and headers, nothing else; no offset commits. */
    private Run plain(String id) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, env.bootstrapServers());
        p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.putAll(consumerProperties);
        p.put(ConsumerConfig.GROUP_ID_CONFIG, "bench-plain-" + id);
        long read = 0;
        long touched = 0;
        long polls = 0;
        long t0 = 0;
        long deadline = System.nanoTime() + timeout().toNanos();
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(p, new ByteArrayDeserializer(),
                new ByteArrayDeserializer())) {
            consumer.subscribe(List.of(topic));
            while (read < events) {
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException("plain consumer read " + read + " of " + events);
                }
                ConsumerRecords<byte[], byte[]> records = consumer.poll(Duration.ofMillis(100));
                if (records.isEmpty()) {
                    continue;
                }
                if (t0 == 0) {
                    t0 = System.nanoTime();
                }
                polls++;
                for (ConsumerRecord<byte[], byte[]> r : records) {
                    touched += r.value().length + r.headers().toArray().length;
                    read++;
                }
            }
            long t1 = System.nanoTime();
            log.debug("  plain: {} value bytes and headers touched", touched);
            return new Run(read, (t1 - t0) / 1e9, polls);
        }
    }

    /** Store mode into a fresh schema, then a worker drains what was stored. */
    private Run[] storeAndDrain(String id) throws Exception {
        OutboxSchema schema = Backlog.createSchema(env, "bench_inbox_" + id);
        String inboxTable = "\"" + schema.schema() + "\".inbox_event";
        try {
            double seconds;
            KafkaInboxConsumer receiver = inboxConsumer("bench-store-" + id, schema).storeInInbox().build();
            try (receiver) {
                receiver.start();
                seconds = time(() -> receiver.stats().polled() > 0, () -> receiver.stats().stored() >= events,
                        () -> "stored " + receiver.stats().stored());
                awaitOffsetsCommitted("bench-store-" + id);
            }
            Run store = new Run(receiver.stats().stored(), seconds, receiver.stats().batches());
            long rows = env.queryLong("SELECT count(*) FROM " + inboxTable);
            if (rows != events) {
                throw new IllegalStateException("store mode left " + rows + " rows in the inbox, expected " + events);
            }
            // the same starting state for every round: statistics up to date, dirty pages written
            env.execute("ANALYZE " + inboxTable, "CHECKPOINT");
            InboxHandler noOp = (c, e) -> {
            };
            Run drain;
            try (InboxWorker worker = InboxWorker.builder().dataSource(dataSource).schema(schema)
                    .consumer("bench").name("bench-" + id.replace('_', '-')).lanes(lanes).batchSize(batchSize)
                    .handler(Events.EVENT_TYPE, noOp).build()) {
                long t0 = System.nanoTime();
                worker.start();
                long t1 = awaitTrue(() -> worker.stats().processed() >= events,
                        () -> "processed " + worker.stats().processed(), t0 + timeout().toNanos());
                drain = new Run(worker.stats().processed(), (t1 - t0) / 1e9, worker.stats().batches());
            }
            long processed = env.queryLong("SELECT count(*) FROM " + inboxTable + " WHERE state = 'PROCESSED'");
            if (processed != events) {
                throw new IllegalStateException("the worker processed " + processed + " rows, expected " + events);
            }
            return new Run[] {store, drain};
        } finally {
            Backlog.dropSchema(env, schema);
        }
    }

    /**
     * The store mode's database work without Kafka: the same rows (key, value, headers, source coordinates) in
     * batches of {@code max.poll.records}, each in its own transaction on a connection taken from the data source per
     * batch, as the consumer does. The difference to store mode is the poll and the offset commit.
     */
    private Run receiveOnly(String id, Events gen) throws Exception {
        OutboxSchema schema = Backlog.createSchema(env, "bench_receive_" + id);
        try {
            int perBatch = Integer.parseInt(String.valueOf(consumerProperties.getOrDefault(
                    ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "" + ConsumerConfig.DEFAULT_MAX_POLL_RECORDS)));
            List<InboxMessage> messages = new ArrayList<>((int) events);
            for (long i = 0; i < events; i++) {
                ProducerRecord<byte[], byte[]> r = gen.record(topic, i, timeOrderedId(),
                        gen.payload(i).getBytes(StandardCharsets.UTF_8));
                Map<String, String> headers = new LinkedHashMap<>();
                r.headers().forEach(h -> headers.put(h.key(), new String(h.value(), StandardCharsets.UTF_8)));
                messages.add(InboxMessage.builder(UUID.fromString(headers.get(KafkaHeaders.EVENT_ID)))
                        .key(new String(r.key(), StandardCharsets.UTF_8)).eventType(headers.get(KafkaHeaders.EVENT_TYPE))
                        .aggregate(headers.get(KafkaHeaders.AGGREGATE_TYPE), headers.get(KafkaHeaders.AGGREGATE_ID), null)
                        .payload(r.value()).headers(headers)
                        .source(topic, (int) (i % common.partitions), i / common.partitions).build());
            }
            Inbox inbox = Inbox.create(schema);
            long batches = 0;
            long t0 = System.nanoTime();
            for (int from = 0; from < messages.size(); from += perBatch) {
                try (Connection c = dataSource.getConnection()) {
                    c.setAutoCommit(false);
                    inbox.receive(c, "bench", messages.subList(from, Math.min(messages.size(), from + perBatch)));
                    c.commit();
                }
                batches++;
            }
            long t1 = System.nanoTime();
            long rows = env.queryLong("SELECT count(*) FROM \"" + schema.schema() + "\".inbox_event");
            if (rows != events) {
                throw new IllegalStateException("receive left " + rows + " rows in the inbox, expected " + events);
            }
            return new Run(rows, (t1 - t0) / 1e9, batches);
        } finally {
            Backlog.dropSchema(env, schema);
        }
    }

    /** Handle mode with no-op work: what {@code Inbox.once} (dedupe row, savepoint, transaction per poll) costs. */
    private Run once(String id) throws Exception {
        OutboxSchema schema = Backlog.createSchema(env, "bench_once_" + id);
        try {
            double seconds;
            KafkaInboxConsumer receiver = inboxConsumer("bench-once-" + id, schema).handler((c, e) -> {
            }).deadLetterTopic(deadLetterTopic).build();
            try (receiver) {
                receiver.start();
                seconds = time(() -> receiver.stats().polled() > 0, () -> receiver.stats().applied() >= events,
                        () -> "applied " + receiver.stats().applied());
                awaitOffsetsCommitted("bench-once-" + id);
            }
            KafkaInboxConsumer.Stats s = receiver.stats();
            if (s.deadLettered() + s.retries() + s.duplicates() > 0) {
                throw new IllegalStateException("handle mode did more than apply every record once: " + s);
            }
            long rows = env.queryLong("SELECT count(*) FROM \"" + schema.schema() + "\".processed_event");
            if (rows != events) {
                throw new IllegalStateException("handle mode left " + rows + " dedupe rows, expected " + events);
            }
            return new Run(s.applied(), seconds, s.batches());
        } finally {
            Backlog.dropSchema(env, schema);
        }
    }

    private KafkaInboxConsumer.Builder inboxConsumer(String group, OutboxSchema schema) {
        KafkaInboxConsumer.Builder b = KafkaInboxConsumer.builder().bootstrapServers(env.bootstrapServers())
                .groupId(group).consumer("bench").name(group).topics(topic).dataSource(dataSource)
                .schema(schema);
        consumerProperties.forEach(b::property);
        return b;
    }

    /** Not timed: the last batch's offset commit, so that closing the consumer does not cut it off. */
    private void awaitOffsetsCommitted(String group) throws InterruptedException {
        awaitTrue(() -> env.committedOffsets(group) >= events, () -> "offsets committed "
                + env.committedOffsets(group), System.nanoTime() + Duration.ofSeconds(60).toNanos());
    }

    /** Waits for {@code started}, then for {@code done}; returns the seconds from the one to the other. */
    private double time(BooleanSupplier started, BooleanSupplier done, Supplier<String> progress)
            throws InterruptedException {
        long deadline = System.nanoTime() + timeout().toNanos();
        long t0 = awaitTrue(started, progress, deadline);
        return (awaitTrue(done, progress, deadline) - t0) / 1e9;
    }

    /** Polls {@code condition} every millisecond; returns the nanoTime it was first seen true. */
    private long awaitTrue(BooleanSupplier condition, Supplier<String> progress, long deadline)
            throws InterruptedException {
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("not done after " + timeout() + ": " + progress.get() + " of "
                        + events);
            }
            Thread.sleep(1);
        }
        return System.nanoTime();
    }

    private Duration timeout() {
        return Duration.ofSeconds(Math.max(120, events / 200));
    }
}
