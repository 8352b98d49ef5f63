package io.txoutbox.it;

import io.txoutbox.InboxHandler;
import io.txoutbox.InboxWorker;
import io.txoutbox.OutboxSchema;
import java.sql.PreparedStatement;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * An inbox worker as its own JVM, for tests that SIGSTOP it mid-batch. Arguments: jdbcUrl user password schema
 * consumer lanes batchSize stopAtCall workerName. Each event's effect is one row in {@code effect} (event_id,
 * worker), written in the batch's transaction. The {@code stopAtCall}-th handler call (over all lanes) writes its
 * effect, prints {@code WORKER-STOPPING-MID-BATCH} and SIGSTOPs the process: its batch's transaction stays open with
 * that uncommitted effect until the test resumes it (0: never). Prints {@code WORKER-OWNS-ALL-LANES} once it works
 * every lane.
 */
public final class InboxWorkerProcessMain {

    public static void main(String[] args) throws Exception {
        PGSimpleDataSource ds = new PGSimpleDataSource();
        ds.setURL(args[0]);
        ds.setUser(args[1]);
        ds.setPassword(args[2]);
        OutboxSchema schema = OutboxSchema.builder().schema(args[3]).build();
        String consumer = args[4];
        int lanes = Integer.parseInt(args[5]);
        int batchSize = Integer.parseInt(args[6]);
        int stopAt = Integer.parseInt(args[7]);
        String workerName = args[8];
        AtomicInteger calls = new AtomicInteger();
        InboxHandler effect = (c, e) -> {
            try (PreparedStatement ps = c.prepareStatement("INSERT INTO effect (event_id, worker) VALUES (?, ?)")) {
                ps.setObject(1, e.eventId());
                ps.setString(2, workerName);
                ps.executeUpdate();
            }
            if (calls.incrementAndGet() == stopAt) {
                long pid = ProcessHandle.current().pid();
                System.out.println("WORKER-STOPPING-MID-BATCH event=" + e.eventId() + " pid=" + pid);
                System.out.flush();
                try {
                    new ProcessBuilder("kill", "-STOP", Long.toString(pid)).inheritIO().start().waitFor();
                } finally {
                    // resumed (the wait may end with the handler budget's interrupt: the stop outlasted it)
                    System.out.println("WORKER-RESUMED");
                    System.out.flush();
                }
            }
        };
        InboxWorker worker = InboxWorker.builder().dataSource(ds).schema(schema).consumer(consumer).name(workerName)
                .lanes(lanes).batchSize(batchSize).pollInterval(Duration.ofMillis(20)).defaultHandler(effect)
                .build().start();
        Runtime.getRuntime().addShutdownHook(new Thread(worker::close));
        long deadline = System.nanoTime() + Duration.ofMinutes(1).toNanos();
        while (worker.stats().lanesOwned() < lanes && System.nanoTime() < deadline) {
            Thread.sleep(20); // polling our own status: no condition object to wait on across lanes
        }
        System.out.println("WORKER-OWNS-ALL-LANES " + worker.stats().lanesOwned());
        System.out.flush();
        Thread.currentThread().join(); // until killed
    }
}
