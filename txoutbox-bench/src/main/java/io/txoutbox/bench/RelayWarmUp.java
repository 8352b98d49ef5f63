package io.txoutbox.bench;

import io.txoutbox.Outbox;
import io.txoutbox.OutboxMessage;
import io.txoutbox.OutboxSchema;
import io.txoutbox.PollingRelay;
import io.txoutbox.internal.progress.ProgressModels;
import java.sql.Connection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Sends a few events through every lane of a relay before anything is timed: producers created, transactions
 * initialised (on a fresh broker the first one also creates {@code __transaction_state}), plans and JIT warm.
 */
final class RelayWarmUp {

    static final int EVENTS = 64;

    private RelayWarmUp() {
    }

    /** Publishes {@link #EVENTS} events with distinct keys to {@code warmTopic} and waits until all are published. */
    static void run(BenchEnv env, PollingRelay relay, OutboxSchema schema, Events gen, String warmTopic)
            throws Exception {
        run(env, List.of(relay), schema, gen, warmTopic);
    }

    /** The same for several instances of one relay: all of them together publish the warm-up events. */
    static void run(BenchEnv env, List<PollingRelay> relays, OutboxSchema schema, Events gen, String warmTopic)
            throws Exception {
        env.createTopic(warmTopic, Map.of());
        long before = published(relays);
        Outbox outbox = Outbox.builder().schema(schema).build();
        try (Connection c = env.dataSource().getConnection()) {
            c.setAutoCommit(false);
            List<OutboxMessage> ms = new ArrayList<>();
            for (int i = 0; i < EVENTS; i++) {
                ms.add(OutboxMessage.builder().topic(warmTopic).aggregate("Warm", "warm-" + i).eventType("Warm")
                        .jsonPayload(gen.payload(i)).build());
            }
            outbox.publish(c, ms);
            c.commit();
        }
        relays.forEach(PollingRelay::nudge);
        long deadline = System.nanoTime() + Duration.ofSeconds(120).toNanos();
        while (published(relays) < before + EVENTS) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("warm-up not published after 120 s: " + published(relays));
            }
            Thread.sleep(5);
        }
        // delivered; under the cursor model published once the lanes' cursors pass them, before anything is timed
        awaitPublishedInTable(env, schema, warmTopic, deadline);
    }

    /** The same for relays in other processes: waits until the warm-up events are published in the table. */
    static void runExternal(BenchEnv env, OutboxSchema schema, Events gen, String warmTopic) throws Exception {
        env.createTopic(warmTopic, Map.of());
        Outbox outbox = Outbox.builder().schema(schema).notifyOnPublish(true).build();
        try (Connection c = env.dataSource().getConnection()) {
            c.setAutoCommit(false);
            List<OutboxMessage> ms = new ArrayList<>();
            for (int i = 0; i < EVENTS; i++) {
                ms.add(OutboxMessage.builder().topic(warmTopic).aggregate("Warm", "warm-" + i).eventType("Warm")
                        .jsonPayload(gen.payload(i)).build());
            }
            outbox.publish(c, ms);
            c.commit();
        }
        awaitPublishedInTable(env, schema, warmTopic, System.nanoTime() + Duration.ofSeconds(120).toNanos());
    }

    /** Waits until the table's progress model says the warm-up events are published. */
    private static void awaitPublishedInTable(BenchEnv env, OutboxSchema schema, String warmTopic, long deadline)
            throws InterruptedException {
        String sql = "SELECT count(*) FROM " + schema.qualifiedOutboxTable() + " o WHERE o.topic = '" + warmTopic
                + "' AND " + ProgressModels.of(schema).published("o");
        while (env.queryLong(sql) < EVENTS) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("warm-up not published after 120 s: " + env.queryLong(sql));
            }
            Thread.sleep(20);
        }
    }

    static long published(List<PollingRelay> relays) {
        long sum = 0;
        for (PollingRelay r : relays) {
            sum += r.stats().published();
        }
        return sum;
    }
}
