package io.txoutbox.bench;

import picocli.CommandLine;
import picocli.CommandLine.Command;

/**
 * Entry point of the benchmarks: {@code drain} (backlog drain, relay vs raw producer vs naive relay), {@code steady}
 * (commit-to-broker latency at a fixed open-loop rate), {@code longtx} (the same while a transaction holds the
 * xmin horizon) and {@code inbox} (the consuming side: inbox receive, worker drain and {@code Inbox.once} against a
 * plain consumer), {@code parked} (claim time against the number of parked keys), {@code progress} (what recording
 * progress costs
 * the database, by model), {@code spring-publish} and {@code spring-publish-call} (publishing through the Spring Boot
 * starter against plain JDBC: per transaction, per call), {@code spring-drain} (the starter's relay against the core
 * relay). Each prints a table and the command that reproduces it.
 */
@Command(name = "txoutbox-bench", mixinStandardHelpOptions = true,
        subcommands = {DrainBench.class, SteadyBench.class, LongTxBench.class, TakeoverBench.class,
                RetentionBench.class, KeptBench.class, InboxBench.class, ParkedBench.class,
                ProgressBench.class, SpringDrainBench.class,
                SpringPublishCallBench.class},
        description = "End-to-end benchmarks of txoutbox on PostgreSQL and Kafka.")
public final class Bench implements Runnable {

    @Override
    public void run() {
        new CommandLine(this).usage(System.out);
    }

    public static void main(String[] args) {
        int code = new CommandLine(new Bench()).execute(args);
        System.exit(code);
    }
}
