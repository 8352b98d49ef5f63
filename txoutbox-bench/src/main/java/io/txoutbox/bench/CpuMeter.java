package io.txoutbox.bench;

import io.txoutbox.testing.process.ProcStat;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.OptionalLong;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * CPU time by component over a measured window: every JVM thread ({@code ThreadMXBean}, grouped by name with
 * {@link CpuRules}), every backend of a local PostgreSQL server ({@code /proc/<pid>/stat}, grouped by
 * {@code application_name}), the broker's process when it runs apart, this JVM as a whole and the machine.
 *
 * <p>Threads and backends that end inside the window: a sampler thread reads all of them every second and keeps
 * the last value per thread id (per pid and start time for backends), so a thread that ends loses at most its last
 * second; they are counted in {@link Result#threadsEnded()} and {@link Result#backendsEnded()}. Threads and backends
 * that start inside the window count from zero; one that starts and ends between two samples is not seen at all.
 */
final class CpuMeter implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(CpuMeter.class);
    private static final long SAMPLE_MILLIS = 1000;

    private final DataSource pg;
    private final OptionalLong brokerPid;
    private static final long TICKS_PER_SECOND = ProcStat.clockTicks();
    private final com.sun.management.ThreadMXBean threads =
            (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
    private final com.sun.management.OperatingSystemMXBean os =
            (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
    private final Map<Long, Counter> threadCpu = new HashMap<>();
    private final Map<String, Counter> backendCpu = new HashMap<>();
    /** JVM-internal threads (JIT, GC) by tid, in clock ticks. */
    private final Map<Long, Counter> nativeCpu = new HashMap<>();
    /** CPU of the postmaster's reaped children (cutime + cstime): every backend that ended, sampled or not. */
    private long reaped0 = -1;
    private long reapedLast = -1;
    private Thread sampler;
    private Connection pgConnection;
    private long startNanos;
    private long jvm0;
    private long broker0;
    private ProcStat.Jiffies machine0;
    private String load0;
    private volatile boolean running;

    /** A CPU counter: component, value at the window's start (0 if it started later) and the last one read. */
    private static final class Counter {
        final String component;
        final long baseline;
        long last;
        boolean seenLast;

        Counter(String component, long baseline) {
            this.component = component;
            this.baseline = baseline;
            this.last = baseline;
        }
    }

    /**
     * @param pg a data source of the server whose backends are measured, or null when the server is not local
     * @param brokerPid the broker's process when it runs apart
     */
    CpuMeter(DataSource pg, OptionalLong brokerPid) {
        this.pg = pg;
        this.brokerPid = brokerPid;
        if (!threads.isThreadCpuTimeEnabled()) {
            threads.setThreadCpuTimeEnabled(true);
        }
    }

    /** Takes the start snapshot and starts sampling every second. */
    synchronized CpuMeter start() {
        if (pg != null) {
            try {
                pgConnection = pg.getConnection();
                pgConnection.setClientInfo("ApplicationName", "bench-meter");
            } catch (SQLException e) {
                throw new IllegalStateException("CPU meter: cannot connect to PostgreSQL: " + e.getMessage(), e);
            }
        }
        threadCpu.clear();
        backendCpu.clear();
        nativeCpu.clear();
        reaped0 = -1;
        load0 = BenchEnv.loadAverage();
        machine0 = ProcStat.machineJiffies();
        jvm0 = os.getProcessCpuTime();
        broker0 = brokerPid.isPresent() ? ProcStat.processTicks(brokerPid.getAsLong()) : -1;
        startNanos = System.nanoTime();
        sample(true);
        running = true;
        sampler = new Thread(this::loop, "bench-cpu-sampler");
        sampler.setDaemon(true);
        sampler.start();
        return this;
    }

    private void loop() {
        while (running) {
            try {
                Thread.sleep(SAMPLE_MILLIS);
                synchronized (this) {
                    if (running) {
                        sample(false);
                    }
                }
            } catch (InterruptedException e) {
                return;
            } catch (RuntimeException e) {
                log.warn("CPU meter: sample failed: {}", e.toString());
            }
        }
    }

    /** Takes the end snapshot and stops sampling. */
    Result stop() throws InterruptedException {
        synchronized (this) {
            running = false;
        }
        sampler.interrupt();
        sampler.join();
        synchronized (this) {
            sample(false);
            double wall = (System.nanoTime() - startNanos) / 1e9;
            long jvm = os.getProcessCpuTime() - jvm0;
            long broker = broker0 >= 0 ? toNanos(ProcStat.processTicks(brokerPid.getAsLong()) - broker0) : -1;
            ProcStat.Jiffies machine1 = ProcStat.machineJiffies();
            long busy = machine1.busy() - machine0.busy();
            long total = machine1.total() - machine0.total();
            Map<String, Long> byThread = new LinkedHashMap<>();
            int threadsEnded = 0;
            for (Counter c : threadCpu.values()) {
                byThread.merge(c.component, c.last - c.baseline, Long::sum);
                threadsEnded += c.seenLast ? 0 : 1;
            }
            for (Counter c : nativeCpu.values()) {
                byThread.merge(c.component, toNanos(c.last - c.baseline), Long::sum);
                threadsEnded += c.seenLast ? 0 : 1;
            }
            Map<String, Long> byBackend = new LinkedHashMap<>();
            int backendsEnded = 0;
            long endedSampled = 0;
            long endedLifetime = 0; // up to the last sample, before the window too: what the reaped CPU holds of them
            for (Counter c : backendCpu.values()) {
                byBackend.merge(c.component, toNanos(c.last - c.baseline), Long::sum);
                backendsEnded += c.seenLast ? 0 : 1;
                endedSampled += c.seenLast ? 0 : toNanos(c.last - c.baseline);
                endedLifetime += c.seenLast ? 0 : toNanos(c.last);
            }
            // a reaped child's whole life counts in cutime + cstime; what its last sample did not see is in the window
            long unsampled = reaped0 < 0 ? -1 : toNanos(reapedLast - reaped0) - endedLifetime;
            if (unsampled > 0) {
                byBackend.put(CpuRules.PG_ENDED_UNSAMPLED, unsampled);
            }
            Map<String, Integer> endedGroups = new LinkedHashMap<>();
            backendCpu.values().stream().filter(c -> !c.seenLast).forEach(c -> endedGroups.merge(c.component, 1,
                    Integer::sum));
            if (!endedGroups.isEmpty()) {
                log.info("CPU meter: backends that ended in the window, by group: {}", endedGroups);
            }
            close();
            return new Result(wall, Runtime.getRuntime().availableProcessors(), load0, BenchEnv.loadAverage(),
                    total == 0 ? Double.NaN : (double) busy / total, jvm, broker, byThread, byBackend, pg != null,
                    threadsEnded, threadCpu.size() + nativeCpu.size(), backendsEnded, backendCpu.size(),
                    unsampled < 0 ? -1 : endedSampled + unsampled, endedSampled);
        }
    }

    private long toNanos(long ticks) {
        return ticks * 1_000_000_000L / TICKS_PER_SECOND;
    }

    private void sample(boolean first) {
        threadCpu.values().forEach(c -> c.seenLast = false);
        long[] ids = threads.getAllThreadIds();
        long[] cpu = threads.getThreadCpuTime(ids);
        java.lang.management.ThreadInfo[] info = threads.getThreadInfo(ids, 0);
        for (int i = 0; i < ids.length; i++) {
            if (cpu[i] < 0 || info[i] == null) {
                continue; // ended between the two calls
            }
            long v = cpu[i];
            String name = info[i].getThreadName();
            Counter c = threadCpu.computeIfAbsent(ids[i], id -> new Counter(CpuRules.thread(name), first ? v : 0));
            c.last = v;
            c.seenLast = true;
        }
        sampleNative(first);
        if (pgConnection != null) {
            sampleBackends(first);
        }
    }

    private void sampleNative(boolean first) {
        nativeCpu.values().forEach(c -> c.seenLast = false);
        java.io.File[] tasks = new java.io.File("/proc/self/task").listFiles();
        if (tasks == null) {
            return;
        }
        for (java.io.File task : tasks) {
            String line;
            try {
                line = Files.readString(task.toPath().resolve("stat"));
            } catch (IOException ended) {
                continue;
            }
            String component = CpuRules.nativeThread(ProcStat.comm(line));
            if (component != null) {
                long ticks = ProcStat.parse(line).ticks();
                Counter c = nativeCpu.computeIfAbsent(Long.parseLong(task.getName()),
                        tid -> new Counter(component, first ? ticks : 0));
                c.last = ticks;
                c.seenLast = true;
            }
        }
    }

    private void sampleBackends(boolean first) {
        backendCpu.values().forEach(c -> c.seenLast = false);
        try (Statement st = pgConnection.createStatement();
             ResultSet rs = st.executeQuery("SELECT pid, coalesce(application_name, ''), coalesce(usename, ''),"
                     + " coalesce(backend_type, '') FROM pg_stat_activity")) {
            Long postmaster = null;
            while (rs.next()) {
                long pid = rs.getLong(1);
                String group = CpuRules.backend(rs.getString(2), rs.getString(3), rs.getString(4));
                ProcStat.Stat stat = ProcStat.read(pid).orElse(null);
                if (stat != null) {
                    count("pg:" + pid + ":" + stat.startTime(), group, stat.ticks(), first);
                    postmaster = stat.ppid();
                }
            }
            if (postmaster != null) {
                ProcStat.Stat stat = ProcStat.read(postmaster).orElse(null);
                if (stat != null) {
                    count("pg:" + postmaster + ":" + stat.startTime(), CpuRules.PG_BACKGROUND, stat.ticks(), first);
                    reapedLast = stat.cutime() + stat.cstime();
                    if (first) {
                        reaped0 = reapedLast;
                    }
                }
            }
        } catch (SQLException e) {
            throw new IllegalStateException("CPU meter: pg_stat_activity failed: " + e.getMessage(), e);
        }
    }

    private void count(String key, String group, long ticks, boolean first) {
        Counter c = backendCpu.computeIfAbsent(key, k -> new Counter(group, first ? ticks : 0));
        c.last = ticks;
        c.seenLast = true;
    }

    @Override
    public synchronized void close() {
        running = false;
        if (sampler != null) {
            sampler.interrupt();
        }
        if (pgConnection != null) {
            try {
                pgConnection.close();
            } catch (SQLException ignored) {
                // the server is going away
            }
            pgConnection = null;
        }
    }

    /**
     * One window's CPU: per component in nanoseconds, JVM threads and PostgreSQL backends apart; {@code brokerNanos}
     * is the broker's own process ({@code -1} when it runs in this JVM), {@code machineBusy} the fraction of all cores
     * busy ({@code /proc/stat}); {@code endedBackendNanos} the in-window CPU of backends that ended in it
     * (from the postmaster's reaped children, {@code -1} if unknown), {@code endedSampledNanos} the part the groups
     * hold.
     */
    record Result(double wallSeconds, int cpus, String loadStart, String loadEnd, double machineBusy, long jvmNanos,
                  long brokerNanos, Map<String, Long> threads, Map<String, Long> backends, boolean backendsMeasured,
                  int threadsEnded, int threadsSeen, int backendsEnded, int backendsSeen, long endedBackendNanos,
                  long endedSampledNanos) {

        long threads(String... components) {
            long sum = 0;
            for (String c : components) {
                sum += threads.getOrDefault(c, 0L);
            }
            return sum;
        }

        long backends(String... groups) {
            long sum = 0;
            for (String g : groups) {
                sum += backends.getOrDefault(g, 0L);
            }
            return sum;
        }

        /** The sum of two windows (drain rounds): CPU and wall time add up, the load is the first's and last's. */
        Result plus(Result o) {
            Map<String, Long> t = new LinkedHashMap<>(threads);
            o.threads.forEach((k, v) -> t.merge(k, v, Long::sum));
            Map<String, Long> b = new LinkedHashMap<>(backends);
            o.backends.forEach((k, v) -> b.merge(k, v, Long::sum));
            double wall = wallSeconds + o.wallSeconds;
            return new Result(wall, cpus, loadStart, o.loadEnd,
                    (machineBusy * wallSeconds + o.machineBusy * o.wallSeconds) / wall, jvmNanos + o.jvmNanos,
                    brokerNanos < 0 || o.brokerNanos < 0 ? -1 : brokerNanos + o.brokerNanos, t, b,
                    backendsMeasured && o.backendsMeasured, threadsEnded + o.threadsEnded,
                    threadsSeen + o.threadsSeen, backendsEnded + o.backendsEnded, backendsSeen + o.backendsSeen,
                    endedBackendNanos < 0 || o.endedBackendNanos < 0 ? -1 : endedBackendNanos + o.endedBackendNanos,
                    endedSampledNanos + o.endedSampledNanos);
        }
    }
}
