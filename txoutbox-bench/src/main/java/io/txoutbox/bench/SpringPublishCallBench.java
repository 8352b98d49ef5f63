package io.txoutbox.bench;

import com.zaxxer.hikari.HikariDataSource;
import io.txoutbox.Outbox;
import io.txoutbox.OutboxMessage;
import io.txoutbox.OutboxSchema;
import io.txoutbox.jackson.JacksonPayloadSerializer;
import io.txoutbox.spring.OutboxEventPublisher;
import io.txoutbox.spring.internal.SpringOutboxEventPublisher;
import io.txoutbox.testing.postgres.TestPostgres;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
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
import picocli.CommandLine.Spec;
import picocli.CommandLine.Model.CommandSpec;

/**
 * What one {@code publish} call costs through the Spring Boot starter against plain JDBC (issue 13: within 10%), with
 * the transaction around it left out: only the calls are timed, {@code --per-tx} of them inside each open
 * transaction; begin and commit are not. Plain: {@code outbox.publish(connection, OutboxMessage…objectPayload(event)
 * .build())} on a connection with autocommit off; Spring: {@code OutboxEventPublisher.publish(topic, key, event)}
 * inside {@code TransactionTemplate} on a {@code DataSourceTransactionManager}. Same pool, same {@link Outbox}, same
 * Jackson serializer, same events (made before the clock starts). The two sides run interleaved transaction by
 * transaction, so a change of load hits both; rounds alternate which side goes first in each pair; the outbox table
 * is emptied between rounds. Besides the wall time, the calling thread's CPU time in the calls: the publisher's own
 * work, which a busy machine's waits for PostgreSQL and for a core do not blur (PostgreSQL's side, the INSERT, is the
 * same statement on both sides).
 */
@Command(name = "spring-publish-call", mixinStandardHelpOptions = true,
        description = "µs per publish call inside an open transaction: OutboxEventPublisher vs plain outbox.publish.")
final class SpringPublishCallBench implements Callable<Integer> {

    private static final String TOPIC = "order.events";
    /** The caller's CPU in the calls: what the publisher itself adds, without the wait for PostgreSQL or the CPU. */
    private static final ThreadMXBean THREAD = ManagementFactory.getThreadMXBean();

    @Spec
    CommandSpec spec;

    @Option(names = "--tx", defaultValue = "200",
            description = "transactions per side per round (default ${DEFAULT-VALUE})")
    int transactions;

    @Option(names = "--per-tx", defaultValue = "100",
            description = "publish calls per transaction (default ${DEFAULT-VALUE})")
    int perTx;

    @Option(names = "--rounds", defaultValue = "10", description = "reported rounds (default ${DEFAULT-VALUE})")
    int rounds;

    @Option(names = "--warmup-rounds", defaultValue = "2",
            description = "rounds not reported (default ${DEFAULT-VALUE})")
    int warmupRounds;

    /** The event, as the design notes' handler builds it. */
    record OrderCreatedEvent(UUID eventUuid, String orderId, BigDecimal orderTotal) {
    }

    /**
     * Nanoseconds in the publish calls (wall, and CPU of the calling thread) and in whole transactions (begin to
     * commit) of one side in one round.
     */
    private static final class Tally {
        long callNanos;
        long callCpuNanos;
        long txNanos;
        long calls;
        long transactions;

        void calls(long wallFrom, long cpuFrom) {
            callNanos += System.nanoTime() - wallFrom;
            callCpuNanos += THREAD.getCurrentThreadCpuTime() - cpuFrom;
        }

        double callMicros() {
            return callNanos / 1e3 / calls;
        }

        double callCpuMicros() {
            return callCpuNanos / 1e3 / calls;
        }

        double txMicros() {
            return txNanos / 1e3 / transactions;
        }
    }

    @FunctionalInterface
    private interface Side {
        /** One transaction publishing {@code events}; adds its times to {@code tally}. */
        void transaction(OrderCreatedEvent[] events, String[] keys, Tally tally) throws Exception;
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
            OutboxEventPublisher spring = new SpringOutboxEventPublisher(ds, outbox, shard -> wakeUps.incrementAndGet(), null);
            Side plain = (events, keys, tally) -> {
                long b = System.nanoTime();
                try (Connection c = ds.getConnection()) {
                    c.setAutoCommit(false);
                    long cpu0 = THREAD.getCurrentThreadCpuTime();
                    long t0 = System.nanoTime();
                    for (int k = 0; k < events.length; k++) {
                        outbox.publish(c, OutboxMessage.builder().topic(TOPIC).key(keys[k]).aggregate(TOPIC, keys[k])
                                .eventType("OrderCreatedEvent").objectPayload(events[k]).build());
                    }
                    tally.calls(t0, cpu0);
                    c.commit();
                }
                tally.txNanos += System.nanoTime() - b;
                tally.calls += events.length;
                tally.transactions++;
            };
            Side viaSpring = (events, keys, tally) -> {
                long b = System.nanoTime();
                tx.executeWithoutResult(s -> {
                    long cpu0 = THREAD.getCurrentThreadCpuTime();
                    long t0 = System.nanoTime();
                    for (int k = 0; k < events.length; k++) {
                        spring.publish(TOPIC, keys[k], events[k]);
                    }
                    tally.calls(t0, cpu0);
                });
                tally.txNanos += System.nanoTime() - b;
                tally.calls += events.length;
                tally.transactions++;
            };
            String load0 = BenchEnv.loadAverage();
            System.out.printf(Locale.ROOT, "spring-publish-call: %d transactions × %d publish calls per side per round,"
                    + " %d rounds after %d warm-up rounds; load %s on %d cores; embedded PostgreSQL (fsync off)%n",
                    transactions, perTx, rounds, warmupRounds, load0, Runtime.getRuntime().availableProcessors());
            System.out.println("| round | first | plain µs/call | spring µs/call | spring/plain | plain CPU µs/call"
                    + " | spring CPU µs/call | spring − plain CPU µs | plain µs/tx | spring µs/tx | load |");
            System.out.println("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|");
            List<Double> ratios = new ArrayList<>();
            List<Double> plainCalls = new ArrayList<>();
            List<Double> springCalls = new ArrayList<>();
            List<Double> txRatios = new ArrayList<>();
            List<Double> cpuDiffs = new ArrayList<>();
            List<Double> plainCpu = new ArrayList<>();
            int n = 0;
            for (int r = -warmupRounds; r < rounds; r++) {
                boolean plainFirst = Math.floorMod(r, 2) == 0;
                Tally p = new Tally();
                Tally s = new Tally();
                for (int j = 0; j < transactions; j++) {
                    OrderCreatedEvent[] pe = new OrderCreatedEvent[perTx];
                    OrderCreatedEvent[] se = new OrderCreatedEvent[perTx];
                    String[] keys = new String[perTx];
                    for (int k = 0; k < perTx; k++) {
                        pe[k] = event(n);
                        se[k] = event(n);
                        keys[k] = "order-" + (n % 1000);
                        n++;
                    }
                    if (plainFirst) {
                        plain.transaction(pe, keys, p);
                        viaSpring.transaction(se, keys, s);
                    } else {
                        viaSpring.transaction(se, keys, s);
                        plain.transaction(pe, keys, p);
                    }
                }
                try (Connection c = ds.getConnection(); var st = c.createStatement()) {
                    st.execute("TRUNCATE " + schema.qualifiedOutboxTable()); // every round starts from an empty table
                }
                if (r < 0) {
                    continue;
                }
                double ratio = s.callMicros() / p.callMicros();
                ratios.add(ratio);
                plainCalls.add(p.callMicros());
                springCalls.add(s.callMicros());
                txRatios.add(s.txMicros() / p.txMicros());
                cpuDiffs.add(s.callCpuMicros() - p.callCpuMicros());
                plainCpu.add(p.callCpuMicros());
                System.out.printf(Locale.ROOT, "| %d | %s | %.2f | %.2f | %.3f | %.2f | %.2f | %+.2f | %.0f | %.0f"
                        + " | %s |%n", r + 1, plainFirst ? "plain" : "spring", p.callMicros(), s.callMicros(), ratio,
                        p.callCpuMicros(), s.callCpuMicros(), s.callCpuMicros() - p.callCpuMicros(), p.txMicros(),
                        s.txMicros(), BenchEnv.loadAverage());
            }
            System.out.printf(Locale.ROOT, "median µs/call: plain %.2f, spring %.2f; spring/plain median %.3f"
                            + " (min %.3f, max %.3f) over %d rounds; whole transactions spring/plain median %.3f%n",
                    Stats.median(plainCalls), Stats.median(springCalls), Stats.median(ratios), Stats.min(ratios),
                    Stats.max(ratios), ratios.size(), Stats.median(txRatios));
            System.out.printf(Locale.ROOT, "calling thread's CPU per call: plain %.2f µs (median), spring − plain"
                            + " median %+.2f µs (min %+.2f, max %+.2f) = %+.1f%% of the plain call's median wall"
                            + " time%n",
                    Stats.median(plainCpu), Stats.median(cpuDiffs), Stats.min(cpuDiffs), Stats.max(cpuDiffs),
                    100 * Stats.median(cpuDiffs) / Stats.median(plainCalls));
            System.out.printf(Locale.ROOT, "load %s at start, %s at end; after-commit wake-ups %d;"
                            + " command: txoutbox-bench/bench.sh %s%n",
                    load0, BenchEnv.loadAverage(), wakeUps.get(),
                    String.join(" ", spec.commandLine().getParseResult().originalArgs()));
        }
        return 0;
    }

    private static OrderCreatedEvent event(long i) {
        return new OrderCreatedEvent(UUID.randomUUID(), "order-" + i, BigDecimal.valueOf(i, 2));
    }
}
