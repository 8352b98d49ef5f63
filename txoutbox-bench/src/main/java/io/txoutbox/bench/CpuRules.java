package io.txoutbox.bench;

import java.util.List;
import java.util.regex.Pattern;

/**
 * Which component a JVM thread or a PostgreSQL backend works for, by name: ordered rules, the first match wins. The
 * names are the ones a thread dump of {@code bench steady} and {@code bench drain} shows.
 */
final class CpuRules {

    static final String RELAY_LANES = "relay lanes";
    static final String RELAY_HELPERS = "relay helpers";
    static final String RELAY_PRODUCERS = "relay producers";
    static final String OTHER_PRODUCERS = "other producers";
    static final String WRITERS = "writers";
    static final String CONSUMER = "consumer (read-back)";
    static final String BROKER = "broker (in-process)";
    static final String JIT = "JIT";
    static final String GC_VM = "GC and VM";
    static final String METER = "meter";
    static final String OTHER = "other";

    static final String PG_RELAY_LANES = "relay lane sessions";
    static final String PG_RELAY_OTHER = "relay other sessions";
    static final String PG_WRITERS = "writer sessions";
    static final String PG_BACKGROUND = "background (autovacuum, WAL writer, checkpointer, postmaster)";
    static final String PG_OTHER = "other sessions (bench set-up, probes, meter)";
    /** Backends that ended in the window, the CPU after their last sample (any group; from the postmaster). */
    static final String PG_ENDED_UNSAMPLED = "ended after their last sample (any group)";

    /** The application_name of the writers' sessions. */
    static final String WRITER_APPLICATION = "bench-writer";

    private record Rule(Pattern name, String component) {
    }

    private static Rule rule(String regex, String component) {
        return new Rule(Pattern.compile(regex), component);
    }

    private static final List<Rule> THREADS = List.of(
            // the relay's transactional producers: client ids txoutbox-kafka-<relay name>-<lane>
            rule("kafka-producer-network-thread \\| txoutbox-kafka-.*", RELAY_PRODUCERS),
            rule("kafka-producer-network-thread \\| .*", OTHER_PRODUCERS),
            rule("txoutbox-relay-.*-(lease|members|listen)", RELAY_HELPERS),
            // the starter's own pool for the relay (Hikari, named txoutbox-relay): its housekeeping threads
            rule("txoutbox-relay (housekeeper|connection adder|connection closer)", RELAY_HELPERS),
            // lane loops (txoutbox-relay-<name>-<lane>) and the transport's lane workers (txoutbox-kafka-<lane>)
            rule("txoutbox-relay-.*|txoutbox-kafka-.*", RELAY_LANES),
            rule("bench-writer-.*", WRITERS),
            rule("bench-reader-.*|kafka-coordinator-heartbeat-thread.*", CONSUMER),
            rule("bench-cpu-sampler", METER),
            rule("Reference Handler|Finalizer|Common-Cleaner|Notification Thread|Signal Dispatcher|Attach Listener",
                    GC_VM),
            // the in-process broker (KafkaBroker): request handlers, network, log cleaner, raft, coordinators
            rule("data-plane-kafka-.*|kafka-scheduler-.*|kafka-log-cleaner-thread-.*|kafka-\\d+-.*|raft-.*"
                    + "|quorum-controller-.*|controller-\\d+-.*|broker-\\d+-.*|group-coordinator-.*|share-.*"
                    + "|ExpirationReaper-.*|TxnMarkerSenderThread-.*|AddPartitionsToTxnSenderThread-.*"
                    + "|transaction-log-manager-.*|LogDirFailureHandler|PersisterStateManager|ShareGroupDLQSendThread"
                    + "|SensorExpiryThread|client-metrics-reaper|executor-.*|metrics-meter-tick-thread-.*"
                    + "|Cleaner-\\d+|kafka-request-handler-.*|kafka-network-thread-.*|ReplicaFetcherThread-.*",
                    BROKER));

    /**
     * The JVM's own threads that {@code ThreadMXBean} does not list (compiler, GC, VM), by their Linux name in
     * {@code /proc/self/task/<tid>/stat} (at most 15 characters).
     */
    private static final List<Rule> NATIVE = List.of(
            rule("C[12] CompilerThre.*", JIT),
            rule("GC Thread#.*|G1 .*|VM Thread|VM Periodic Tas.*|Service Thread|Monitor Deflati.*|Sweeper thread",
                    GC_VM));

    private CpuRules() {
    }

    /** The component of a JVM-internal thread by its Linux name, or null for threads {@link #thread} covers. */
    static String nativeThread(String comm) {
        for (Rule r : NATIVE) {
            if (r.name.matcher(comm).matches()) {
                return r.component;
            }
        }
        return null;
    }

    /** The component of a JVM thread; {@value #OTHER} when no rule matches. */
    static String thread(String name) {
        for (Rule r : THREADS) {
            if (r.name.matcher(name).matches()) {
                return r.component;
            }
        }
        return OTHER;
    }

    /**
     * The group of a PostgreSQL backend: the relay's lane sessions name themselves {@code txoutbox-relay …}; its
     * other sessions connect as the relay's role; writers set {@value #WRITER_APPLICATION}.
     */
    static String backend(String applicationName, String user, String backendType) {
        if (applicationName.startsWith("txoutbox-relay")) {
            return PG_RELAY_LANES;
        }
        if (user.equals(BenchEnv.RELAY_ROLE)) {
            return PG_RELAY_OTHER;
        }
        if (applicationName.equals(WRITER_APPLICATION)) {
            return PG_WRITERS;
        }
        if (!backendType.isEmpty() && !backendType.equals("client backend")) {
            return PG_BACKGROUND;
        }
        return PG_OTHER;
    }
}
