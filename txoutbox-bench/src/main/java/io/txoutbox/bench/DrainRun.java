package io.txoutbox.bench;

import java.time.Duration;

/** What a drain contender needs from the benchmark that runs it: the services, the options, the events, N. */
interface DrainRun {

    BenchEnv env();

    CommonOptions common();

    Events gen();

    /** The backlog of every timed drain. */
    long events();

    /** How long a drain of {@code n} events may take before the run fails. */
    default Duration timeout(long n) {
        return Duration.ofSeconds(Math.max(120, n / 200));
    }
}
