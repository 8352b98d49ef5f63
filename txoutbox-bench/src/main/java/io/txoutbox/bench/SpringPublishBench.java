package io.txoutbox.bench;

import com.zaxxer.hikari.HikariDataSource;
import io.txoutbox.Outbox;
import io.txoutbox.OutboxMessage;
import io.txoutbox.OutboxSchema;
import io.txoutbox.jackson.JacksonPayloadSerializer;
import io.txoutbox.spring.OutboxEventPublisher;
import io.txoutbox.spring.internal.SpringOutboxEventPublisher;
import io.txoutbox.testing.postgres.TestPostgres;
import java.math.BigDecimal;
import java.sql.Connection;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.UUID;
import java.util.concurrent.Callable;
import java.util.concurrent.atomic.AtomicLong;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * What publishing through the Spring Boot starter costs against plain JDBC (issue 13): one transaction per call, one
 * event each, the same {@link Outbox} and the same Jackson serialization on both sides. Plain: a connection from the
 * pool, autocommit off, {@code outbox.publish}, commit. Spring: {@code TransactionTemplate} on a
 * {@code DataSourceTransactionManager} over the same pool, {@code OutboxEventPublisher.publish(topic, key, event)}
 * inside (the connection found through {@code DataSourceUtils}, the after-commit wake-up registered). Rounds
 * alternate which side goes first; PostgreSQL only, no relay, no broker.
 */
@Command(name = "spring-publish", mixinStandardHelpOptions = true,
        description = "µs per publishing transaction: OutboxEventPublisher in a Spring transaction vs plain JDBC.")
final class SpringPublishBench implements Callable<Integer> {

    private static final String TOPIC = "order.events";

    @Option(names = "--calls", defaultValue = "20000", description = "transactions per side per round (default ${DEFAULT-VALUE})")
    int calls;

    @Option(names = "--rounds", defaultValue = "5", description = "alternating rounds (default ${DEFAULT-VALUE})")
    int rounds;

    /** The event, as the design notes' handler builds it. */
    record OrderCreatedEvent(UUID eventUuid, String orderId, BigDecimal orderTotal) {
    }

    @Override
    public Integer call() throws Exception {
        try (TestPostgres pg = TestPostgres.startEmbedded(); HikariDataSource ds = new HikariDataSource()) {
            ds.setJdbcUrl(pg.jdbcUrl());
            ds.setUsername(pg.user());
            ds.setPassword(pg.password());
            ds.setMaximumPoolSize(2);
            OutboxSchema schema = OutboxSchema.defaults();
            schema.migrate(ds);
            Outbox outbox = Outbox.builder().schema(schema).payloadSerializer(new JacksonPayloadSerializer()).build();
            TransactionTemplate tx = new TransactionTemplate(new DataSourceTransactionManager(ds));
            AtomicLong wakeUps = new AtomicLong();
            OutboxEventPublisher spring = new SpringOutboxEventPublisher(ds, outbox, wakeUps::incrementAndGet, null);
            Side plain = i -> {
                try (Connection c = ds.getConnection()) {
                    c.setAutoCommit(false);
                    String key = "order-" + (i % 1000);
                    outbox.publish(c, OutboxMessage.builder().topic(TOPIC).key(key).aggregate(TOPIC, key)
                            .eventType("OrderCreatedEvent").objectPayload(event(i)).build());
                    c.commit();
                }
            };
            Side viaSpring = i -> tx.executeWithoutResult(s -> spring.publish(TOPIC, "order-" + (i % 1000), event(i)));
            measure(plain, Math.max(2000, calls / 4));
            measure(viaSpring, Math.max(2000, calls / 4));
            System.out.printf(Locale.ROOT, "spring-publish: %d transactions per side per round, %d rounds, load %s on"
                    + " %d cores%n", calls, rounds, BenchEnv.loadAverage(), Runtime.getRuntime().availableProcessors());
            System.out.println("round  first   plain_us  spring_us  spring/plain");
            List<Double> ratios = new ArrayList<>();
            for (int r = 0; r < rounds; r++) {
                boolean plainFirst = r % 2 == 0;
                double first = measure(plainFirst ? plain : viaSpring, calls);
                double second = measure(plainFirst ? viaSpring : plain, calls);
                double p = plainFirst ? first : second;
                double s = plainFirst ? second : first;
                ratios.add(s / p);
                System.out.printf(Locale.ROOT, "%5d  %-6s  %8.1f  %9.1f  %12.3f%n", r + 1, plainFirst ? "plain" : "spring",
                        p, s, s / p);
            }
            ratios.sort(Double::compare);
            System.out.printf(Locale.ROOT, "median spring/plain %.3f (min %.3f, max %.3f); after-commit wake-ups %d%n",
                    ratios.get(ratios.size() / 2), ratios.get(0), ratios.get(ratios.size() - 1), wakeUps.get());
        }
        return 0;
    }

    private static OrderCreatedEvent event(int i) {
        return new OrderCreatedEvent(UUID.randomUUID(), "order-" + i, BigDecimal.valueOf(i, 2));
    }

    /** µs per transaction over {@code n} of them. */
    private static double measure(Side side, int n) throws Exception {
        long begin = System.nanoTime();
        for (int i = 0; i < n; i++) {
            side.run(i);
        }
        return (System.nanoTime() - begin) / 1000.0 / n;
    }

    @FunctionalInterface
    private interface Side {
        void run(int i) throws Exception;
    }
}
