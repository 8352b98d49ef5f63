package io.txoutbox.example.spring;

import io.txoutbox.OutboxSchema;
import io.txoutbox.example.spring.orders.PlaceOrder;
import io.txoutbox.example.spring.orders.PlaceOrderHandler;
import io.txoutbox.example.spring.payments.PaymentListener;
import java.math.BigDecimal;
import java.sql.Timestamp;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.clients.admin.TopicDescription;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.kafka.config.KafkaListenerEndpointRegistry;
import org.springframework.kafka.core.KafkaAdmin;
import org.springframework.kafka.listener.MessageListenerContainer;

/**
 * The demo's load and check, on the running application: places the orders through {@link PlaceOrderHandler} from a
 * few threads at a steady rate, waits until every order's event is published and every order paid, and reads the
 * result back with SQL: orders of this run, their events' state in the outbox, their payments, and the latency from
 * the order's row to its payment's row.
 */
final class OrderJob {

    /** What the run found; {@link #line()} is the demo's last line. */
    record Summary(long orders, long published, long paid, long duplicatesSkipped, long lost, long paidTwice,
            long failed, long p50Ms, long p99Ms) {

        /** Every order published and paid exactly once. */
        boolean clean() {
            return lost == 0 && paidTwice == 0 && published == orders && paid == orders;
        }

        String line() {
            return String.format("orders=%d published=%d paid=%d duplicates_skipped=%d lost=%d p50_ms=%d p99_ms=%d",
                    orders, published, paid, duplicatesSkipped, lost, p50Ms, p99Ms);
        }
    }

    private static final int WARM_UP_ORDERS = 20;

    private final ConfigurableApplicationContext context;
    private final SpringOrdersDemo.Options options;
    private final PlaceOrderHandler handler;
    private final JdbcTemplate jdbc;
    private final PaymentListener payments;
    private final String outboxTable;

    OrderJob(ConfigurableApplicationContext context, SpringOrdersDemo.Options options) {
        this.context = context;
        this.options = options;
        this.handler = context.getBean(PlaceOrderHandler.class);
        this.jdbc = context.getBean(JdbcTemplate.class);
        this.payments = context.getBean(PaymentListener.class);
        this.outboxTable = context.getBean(OutboxSchema.class).qualifiedOutboxTable();
    }

    Summary run() throws InterruptedException {
        awaitListenerAssigned();
        warmUp();
        Timestamp runStart = jdbc.queryForObject("SELECT clock_timestamp()", Timestamp.class);

        AtomicLong placed = new AtomicLong();
        AtomicLong failed = new AtomicLong();
        int writers = Math.min(options.writers, options.orders);
        ExecutorService pool = Executors.newFixedThreadPool(writers);
        long intervalNanos = options.rate > 0 ? TimeUnit.SECONDS.toNanos(1) * writers / options.rate : 0;
        say("placing %d orders for %d customers with %d writers%s", options.orders, options.customers, writers,
                options.rate > 0 ? " at " + options.rate + " orders/s" : "");
        for (int w = 0; w < writers; w++) {
            int share = options.orders / writers + (w < options.orders % writers ? 1 : 0);
            pool.submit(() -> {
                long next = System.nanoTime();
                for (int i = 0; i < share; i++) {
                    if (intervalNanos > 0) {
                        next += intervalNanos;
                        long wait = next - System.nanoTime();
                        if (wait > 0) {
                            TimeUnit.NANOSECONDS.sleep(wait);
                        }
                    }
                    ThreadLocalRandom random = ThreadLocalRandom.current();
                    String customer = String.format("customer-%04d", random.nextInt(options.customers));
                    try {
                        handler.handle(new PlaceOrder(customer, BigDecimal.valueOf(100 + random.nextInt(100_000), 2)));
                        placed.incrementAndGet();
                    } catch (RuntimeException e) {
                        if (failed.incrementAndGet() == 1) {
                            say("an order failed (not counted as placed): %s", e);
                        }
                    }
                }
                return null;
            });
        }
        pool.shutdown();

        long deadline = Long.MAX_VALUE;
        long nextReport = 0;
        Counts counts;
        while (true) {
            boolean writersDone = pool.awaitTermination(200, TimeUnit.MILLISECONDS);
            if (writersDone) {
                Thread.sleep(200);
            }
            counts = counts(runStart);
            boolean complete = writersDone && counts.published >= counts.orders && counts.paidOrders >= counts.orders;
            if (complete || System.nanoTime() >= nextReport) {
                say("placed=%d published=%d paid=%d", placed.get(), counts.published, counts.paidOrders);
                nextReport = System.nanoTime() + TimeUnit.SECONDS.toNanos(1);
            }
            if (complete) {
                break;
            }
            if (writersDone && deadline == Long.MAX_VALUE) {
                deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            }
            if (System.nanoTime() > deadline) {
                say("gave up waiting 60 s after the last order");
                break;
            }
        }
        if (counts.orders != placed.get()) {
            say("the orders table holds %d orders of this run, the writers placed %d", counts.orders, placed.get());
        }
        if (failed.get() > 0) {
            say("%d orders failed to commit (not counted)", failed.get());
        }
        long[] latency = latencyPercentiles(runStart);
        Summary summary = new Summary(counts.orders, counts.published, counts.payments, payments.duplicatesSkipped(),
                counts.orders - counts.paidOrders, counts.payments - counts.paidOrders, failed.get(), latency[0],
                latency[1]);
        if (summary.paidTwice() > 0) {
            say("PAID TWICE: %d payments more than paid orders", summary.paidTwice());
        }
        return summary;
    }

    private record Counts(long orders, long published, long payments, long paidOrders) {
    }

    /** This run's orders, those whose event the relay marked published, their payments and the orders paid. */
    private Counts counts(Timestamp runStart) {
        Map<String, Object> row = jdbc.queryForMap("""
                SELECT (SELECT count(*) FROM orders o WHERE o.created_at >= ?) AS orders,
                       (SELECT count(*) FROM orders o JOIN %s e ON e.aggregate_id = o.id::text
                         WHERE o.created_at >= ? AND e.topic = ? AND e.state = 'PUBLISHED') AS published,
                       (SELECT count(*) FROM orders o JOIN payments p ON p.order_id = o.id
                         WHERE o.created_at >= ?) AS payments,
                       (SELECT count(DISTINCT p.order_id) FROM orders o JOIN payments p ON p.order_id = o.id
                         WHERE o.created_at >= ?) AS paid_orders
                """.formatted(outboxTable), runStart, runStart, PlaceOrderHandler.TOPIC, runStart, runStart);
        return new Counts(number(row, "orders"), number(row, "published"), number(row, "payments"),
                number(row, "paid_orders"));
    }

    /** p50 and p99 of order row written → first payment row written, in ms ({@code -1} when nothing was paid). */
    private long[] latencyPercentiles(Timestamp runStart) {
        Map<String, Object> row = jdbc.queryForMap("""
                SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY ms) AS p50,
                       percentile_disc(0.99) WITHIN GROUP (ORDER BY ms) AS p99
                  FROM (SELECT extract(epoch FROM min(p.paid_at) - o.created_at) * 1000 AS ms
                          FROM orders o JOIN payments p ON p.order_id = o.id
                         WHERE o.created_at >= ? GROUP BY o.id, o.created_at) t
                """, runStart);
        return new long[] {Math.round(decimal(row, "p50")), Math.round(decimal(row, "p99"))};
    }

    /**
     * Places a few orders first and waits until they are paid, so that what happens once (the relay's producers
     * starting their first Kafka transaction, the first fetches, the JIT) does not count as the orders' latency. Their
     * customer is {@code warm-up-…}; placed before the run starts, they are not counted.
     */
    private void warmUp() throws InterruptedException {
        long t0 = System.nanoTime();
        String customer = "warm-up-" + UUID.randomUUID();
        for (int i = 0; i < WARM_UP_ORDERS; i++) {
            handler.handle(new PlaceOrder(customer, BigDecimal.ONE));
        }
        long deadline = t0 + TimeUnit.SECONDS.toNanos(60);
        long paid = 0;
        while (System.nanoTime() < deadline) {
            paid = jdbc.queryForObject("SELECT count(DISTINCT p.order_id) FROM orders o JOIN payments p "
                    + "ON p.order_id = o.id WHERE o.customer_id = ?", Long.class, customer);
            if (paid >= WARM_UP_ORDERS) {
                break;
            }
            Thread.sleep(50);
        }
        say("warm-up: %d of %d orders paid in %.1f s (not counted)", paid, WARM_UP_ORDERS,
                (System.nanoTime() - t0) / 1e9);
    }

    /**
     * Waits until the payment service's consumers own every partition of the topic, so that the first orders'
     * latency is not the consumer group's join.
     */
    private void awaitListenerAssigned() throws InterruptedException {
        KafkaAdmin admin = context.getBean(KafkaAdmin.class);
        Map<String, TopicDescription> topics = admin.describeTopics(PlaceOrderHandler.TOPIC);
        int partitions = topics.get(PlaceOrderHandler.TOPIC).partitions().size();
        KafkaListenerEndpointRegistry registry = context.getBean(KafkaListenerEndpointRegistry.class);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (true) {
            int assigned = 0;
            for (MessageListenerContainer container : registry.getListenerContainers()) {
                var owned = container.getAssignedPartitions();
                assigned += owned == null ? 0 : owned.size();
            }
            if (assigned >= partitions) {
                say("payment listener owns %d partitions of %s", assigned, PlaceOrderHandler.TOPIC);
                return;
            }
            if (System.nanoTime() > deadline) {
                say("payment listener owns %d of %d partitions after 60 s; going on", assigned, partitions);
                return;
            }
            Thread.sleep(50);
        }
    }

    private static long number(Map<String, Object> row, String column) {
        return ((Number) row.get(column)).longValue();
    }

    private static double decimal(Map<String, Object> row, String column) {
        Object v = row.get(column);
        return v == null ? -1 : ((Number) v).doubleValue();
    }

    static void say(String format, Object... args) {
        System.out.printf("[demo] " + format + "%n", args);
    }
}
