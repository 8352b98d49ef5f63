package io.txoutbox.example;

import io.txoutbox.Outbox;
import io.txoutbox.OutboxSchema;
import io.txoutbox.OutboxStatus;
import io.txoutbox.PollingRelay;
import io.txoutbox.kafka.KafkaTransport;
import io.txoutbox.testing.history.Delivery;
import io.txoutbox.testing.history.HistoryChecker;
import io.txoutbox.testing.history.HistoryReport;
import io.txoutbox.testing.history.LedgerEntry;
import io.txoutbox.testing.kafka.KafkaBroker;
import io.txoutbox.testing.postgres.TestPostgres;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import javax.sql.DataSource;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * The end-to-end run: an order service writing orders with their events, the polling relay publishing them to
 * Kafka, and a consumer receiving them — on an embedded PostgreSQL and an in-process Kafka broker unless
 * {@code --jdbc-url} and {@code --bootstrap-servers} name real ones. Ends with one line, checked by the history
 * checker: {@code written=N delivered=N lost=0 duplicates=D p50_ms=… p99_ms=…} (commit return to broker append).
 */
public final class OrderServiceDemo {

    private static final String TOPIC = "orders";

    public static void main(String[] args) throws Exception {
        Options o = Options.parse(args);
        long t0 = System.nanoTime();
        TestPostgres embeddedPg = null;
        KafkaBroker embeddedKafka = null;
        try {
            String jdbcUrl = o.jdbcUrl;
            String user = o.jdbcUser;
            String password = o.jdbcPassword;
            if (jdbcUrl == null) {
                embeddedPg = TestPostgres.startEmbedded();
                jdbcUrl = embeddedPg.jdbcUrl();
                user = embeddedPg.user();
                password = embeddedPg.password();
            }
            String bootstrap = o.bootstrapServers;
            if (bootstrap == null) {
                embeddedKafka = KafkaBroker.builder().start();
                bootstrap = embeddedKafka.bootstrapServers();
            }
            say("PostgreSQL %s, Kafka %s%s", jdbcUrl, bootstrap,
                    embeddedPg != null || embeddedKafka != null ? " (embedded)" : "");
            PGSimpleDataSource ds = new PGSimpleDataSource();
            ds.setURL(jdbcUrl);
            ds.setUser(user);
            ds.setPassword(password);
            run(o, ds, bootstrap);
            say("done in %.1f s", (System.nanoTime() - t0) / 1e9);
        } finally {
            if (embeddedKafka != null) {
                embeddedKafka.close();
            }
            if (embeddedPg != null) {
                embeddedPg.close();
            }
        }
        System.exit(0); // the embedded servers' non-daemon threads must not keep the JVM alive
    }

    static void run(Options o, DataSource ds, String bootstrap) throws Exception {
        OutboxSchema schema = OutboxSchema.defaults();
        schema.migrate(ds);
        OrderService.createTables(ds);
        OrderService.createCustomers(ds, o.customers);
        createTopic(bootstrap);

        PollingRelay relay = PollingRelay.builder()
                .dataSource(ds)
                .schema(schema)
                .transport(KafkaTransport.builder().bootstrapServers(bootstrap).mode(o.mode).build())
                .build()
                .start();
        say("relay started, Kafka transport mode %s", o.mode);
        Outbox outbox = Outbox.builder().schema(schema).nudge(relay).build();
        OrderService service = new OrderService(outbox);
        warmUp(ds, outbox, relay);

        Set<UUID> written = ConcurrentHashMap.newKeySet();
        List<OrderService.PlacedOrder> placed = new CopyOnWriteArrayList<>();
        List<Delivery> deliveries = Collections.synchronizedList(new ArrayList<>());
        AtomicBoolean consuming = new AtomicBoolean(true);
        Thread consumer = new Thread(() -> consume(bootstrap, deliveries, consuming), "order-consumer");
        consumer.start();

        AtomicLong failed = new AtomicLong();
        ExecutorService writers = Executors.newFixedThreadPool(o.writers);
        long perWriter = o.orders / o.writers;
        long intervalNanos = o.rate > 0 ? TimeUnit.SECONDS.toNanos(1) * o.writers / o.rate : 0;
        say("placing %d orders for %d customers with %d writers%s", perWriter * o.writers, o.customers,
                o.writers, o.rate > 0 ? " at " + o.rate + " orders/s" : "");
        for (int w = 0; w < o.writers; w++) {
            writers.submit(() -> {
                long next = System.nanoTime();
                try (java.sql.Connection connection = ds.getConnection()) {
                for (long i = 0; i < perWriter; i++) {
                    if (intervalNanos > 0) {
                        next += intervalNanos;
                        long wait = next - System.nanoTime();
                        if (wait > 0) {
                            TimeUnit.NANOSECONDS.sleep(wait);
                        }
                    }
                    String customer = OrderService.customerId(ThreadLocalRandom.current().nextInt(o.customers));
                    try {
                        OrderService.PlacedOrder p = service.placeOrder(connection, customer,
                                100 + ThreadLocalRandom.current().nextInt(100_000));
                        placed.add(p);
                        written.add(p.eventId());
                    } catch (Exception e) {
                        failed.incrementAndGet();
                    }
                }
                }
                return null;
            });
        }
        writers.shutdown();
        long deadline = Long.MAX_VALUE;
        while (true) {
            boolean writersDone = writers.awaitTermination(1, TimeUnit.SECONDS);
            long delivered = distinct(deliveries);
            say("written=%d delivered=%d pending=%d", written.size(), delivered, OutboxStatus.pendingCount(ds, schema));
            if (writersDone && deadline == Long.MAX_VALUE) {
                deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            }
            if (writersDone && delivered >= written.size() || System.nanoTime() > deadline) {
                break;
            }
        }
        // let the consumer see any redelivered copies before counting
        Thread.sleep(500);
        consuming.set(false);
        consumer.join(10_000);
        relay.close();

        List<LedgerEntry> ledger = new ArrayList<>();
        for (OrderService.PlacedOrder p : placed) {
            ledger.add(new LedgerEntry(p.eventId(), p.customerId(), p.customerSeq(),
                    Instant.ofEpochMilli(p.committedAtMillis())));
        }
        List<Delivery> seen;
        synchronized (deliveries) {
            seen = new ArrayList<>(deliveries);
        }
        HistoryReport report = HistoryChecker.check(ledger, seen);
        long[] latencies = latencies(placed, seen);
        say("history: %s", report.summaryLine());
        if (failed.get() > 0) {
            say("%d orders failed to commit (not counted as written)", failed.get());
        }
        System.out.printf("written=%d delivered=%d lost=%d duplicates=%d p50_ms=%d p99_ms=%d%n", report.committed(),
                report.delivered(), report.lost(), report.duplicates(), percentile(latencies, 0.50),
                percentile(latencies, 0.99));
        if (!report.isClean()) {
            System.out.println("HISTORY NOT CLEAN: " + report);
            System.exit(1);
        }
    }

    /**
     * Sends a few events through every lane before the measured run, so that the producers' start (and on a fresh
     * broker the creation of its transaction log) does not count as the orders' latency.
     */
    private static void warmUp(DataSource ds, Outbox outbox, PollingRelay relay) throws Exception {
        long before = relay.stats().published();
        try (java.sql.Connection c = ds.getConnection()) {
            c.setAutoCommit(false);
            List<io.txoutbox.OutboxMessage> warm = new ArrayList<>();
            for (int i = 0; i < 64; i++) {
                warm.add(io.txoutbox.OutboxMessage.builder().topic(TOPIC + "-warmup").aggregate("WarmUp", "w-" + i)
                        .eventType("WarmUp").jsonPayload("{}").build());
            }
            outbox.publish(c, warm);
            c.commit();
        }
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
        while (relay.stats().published() < before + 64 && System.nanoTime() < deadline) {
            Thread.sleep(20); // polling the relay's own counter
        }
        say("relay warmed up (%d lanes)", relay.stats().lanesOwned());
    }

    private static void createTopic(String bootstrap) throws Exception {
        try (Admin admin = Admin.create(Map.of("bootstrap.servers", bootstrap))) {
            admin.createTopics(List.of(new NewTopic(TOPIC, 3, (short) 1)
                    .configs(Map.of("message.timestamp.type", "LogAppendTime")),
                    new NewTopic(TOPIC + "-warmup", 3, (short) 1))).all().get(30, TimeUnit.SECONDS);
        } catch (java.util.concurrent.ExecutionException e) {
            if (!(e.getCause() instanceof TopicExistsException)) {
                throw e;
            }
        }
    }

    /** The consuming service: reads committed records and notes event id, key, position and append time. */
    private static void consume(String bootstrap, List<Delivery> out, AtomicBoolean running) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.GROUP_ID_CONFIG, "order-consumer-" + UUID.randomUUID());
        p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(p, new ByteArrayDeserializer(),
                new ByteArrayDeserializer())) {
            c.subscribe(List.of(TOPIC));
            while (running.get()) {
                for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(100))) {
                    Header h = r.headers().lastHeader("event_id");
                    UUID id = h == null ? null : UUID.fromString(new String(h.value(), StandardCharsets.UTF_8));
                    String key = r.key() == null ? null : new String(r.key(), StandardCharsets.UTF_8);
                    out.add(new Delivery(id, key, r.partition(), r.offset(), r.timestamp()));
                }
            }
        }
    }

    private static long distinct(List<Delivery> deliveries) {
        synchronized (deliveries) {
            return deliveries.stream().map(Delivery::eventId).distinct().count();
        }
    }

    /** Commit return to broker append time of each event's first delivery. */
    private static long[] latencies(List<OrderService.PlacedOrder> placed, List<Delivery> seen) {
        Map<UUID, Long> firstAppend = new ConcurrentHashMap<>();
        for (Delivery d : seen) {
            if (d.eventId() != null) {
                firstAppend.merge(d.eventId(), d.timestampMs(), Math::min);
            }
        }
        return placed.stream().filter(p -> firstAppend.containsKey(p.eventId()))
                .mapToLong(p -> Math.max(0, firstAppend.get(p.eventId()) - p.committedAtMillis())).sorted().toArray();
    }

    private static long percentile(long[] sorted, double q) {
        if (sorted.length == 0) {
            return -1;
        }
        return sorted[(int) Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)];
    }

    private static void say(String format, Object... args) {
        System.out.printf("[demo] " + format + "%n", args);
    }

    static final class Options {
        String jdbcUrl;
        String jdbcUser = "postgres";
        String jdbcPassword = "";
        String bootstrapServers;
        int orders = 20_000;
        int writers = 8;
        int customers = 200;
        int rate = 2_000;
        KafkaTransport.Mode mode = KafkaTransport.Mode.TRANSACTIONAL;

        static Options parse(String[] args) {
            Options o = new Options();
            for (int i = 0; i < args.length; i++) {
                String a = args[i];
                String v = i + 1 < args.length ? args[i + 1] : null;
                switch (a) {
                    case "--jdbc-url" -> o.jdbcUrl = need(a, v);
                    case "--jdbc-user" -> o.jdbcUser = need(a, v);
                    case "--jdbc-password" -> o.jdbcPassword = need(a, v);
                    case "--bootstrap-servers" -> o.bootstrapServers = need(a, v);
                    case "--orders" -> o.orders = positive(a, v);
                    case "--writers" -> o.writers = positive(a, v);
                    case "--customers" -> o.customers = positive(a, v);
                    case "--rate" -> o.rate = Integer.parseInt(need(a, v));
                    case "--mode" -> o.mode = mode(need(a, v));
                    case "--help", "-h" -> {
                        System.out.println("options: --jdbc-url URL --jdbc-user U --jdbc-password P "
                                + "--bootstrap-servers HOST:PORT --orders N (20000) --writers N (8) "
                                + "--customers N (200) --rate ORDERS_PER_S (2000; 0 = as fast as possible) "
                                + "--mode TRANSACTIONAL|IDEMPOTENT (the Kafka transport's mode; TRANSACTIONAL)");
                        System.exit(0);
                    }
                    default -> throw new IllegalArgumentException("unknown option " + a + " (try --help)");
                }
                i++;
            }
            return o;
        }

        private static KafkaTransport.Mode mode(String value) {
            try {
                return KafkaTransport.Mode.valueOf(value.toUpperCase(java.util.Locale.ROOT));
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException("--mode must be TRANSACTIONAL or IDEMPOTENT, was " + value);
            }
        }

        private static String need(String option, String value) {
            if (value == null) {
                throw new IllegalArgumentException(option + " needs a value");
            }
            return value;
        }

        private static int positive(String option, String value) {
            int n = Integer.parseInt(need(option, value));
            if (n < 1) {
                throw new IllegalArgumentException(option + " must be >= 1, was " + n);
            }
            return n;
        }
    }
}
