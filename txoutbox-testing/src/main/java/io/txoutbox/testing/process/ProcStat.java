package io.txoutbox.testing.process;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.Optional;

/**
 * Reads of Linux's {@code /proc}: a process's state and CPU ({@code /proc/<pid>/stat}), the machine's CPU
 * ({@code /proc/stat}). One reader for the harness (a stopped process, an embedded PostgreSQL's cost) and the
 * benchmarks (CPU by component).
 */
public final class ProcStat {

    private ProcStat() {
    }

    /**
     * The fields of a {@code /proc/<pid>/stat} line that the harness uses; CPU in clock ticks ({@link #clockTicks}).
     *
     * @param state     R running, S sleeping, D disk wait, T stopped, Z zombie, ...
     * @param ppid      the parent process
     * @param utime     user CPU of the process (or thread)
     * @param stime     system CPU of the process (or thread)
     * @param cutime    user CPU of its children it has waited for (a postmaster: its ended backends)
     * @param cstime    system CPU of those children
     * @param startTime when it started, in clock ticks after boot (with the pid, names one process for good)
     */
    public record Stat(char state, long ppid, long utime, long stime, long cutime, long cstime, long startTime) {

        /** utime + stime. */
        public long ticks() {
            return utime + stime;
        }

        /** utime + stime + cutime + cstime: the process and its reaped children. */
        public long ticksWithChildren() {
            return utime + stime + cutime + cstime;
        }
    }

    /** Busy and total jiffies of all cores since boot (busy = total − idle − iowait). */
    public record Jiffies(long busy, long total) {
    }

    /**
     * Parses a {@code /proc/<pid>/stat} line; the fields are counted after the parenthesised command name, which may
     * itself contain spaces and parentheses.
     */
    public static Stat parse(String line) {
        int close = line.lastIndexOf(')');
        if (close < 0) {
            throw new IllegalArgumentException("not a /proc/<pid>/stat line (no ')' after the command): " + line);
        }
        // after ")": field 3 state, 4 ppid, ..., 14 utime, 15 stime, 16 cutime, 17 cstime, ..., 22 starttime
        String[] f = line.substring(close + 1).trim().split(" +");
        if (f.length < 20) {
            throw new IllegalArgumentException("a /proc/<pid>/stat line has 52 fields, this one " + (f.length + 2)
                    + ": " + line);
        }
        if (f[0].length() != 1) {
            throw new IllegalArgumentException("not a /proc/<pid>/stat line (state '" + f[0] + "'): " + line);
        }
        return new Stat(f[0].charAt(0), Long.parseLong(f[1]), Long.parseLong(f[11]), Long.parseLong(f[12]),
                Long.parseLong(f[13]), Long.parseLong(f[14]), Long.parseLong(f[19]));
    }

    /** The command (thread) name of a {@code /proc/<pid>/stat} line: between the first '(' and the last ')'. */
    public static String comm(String line) {
        int open = line.indexOf('(');
        int close = line.lastIndexOf(')');
        if (open < 0 || close < open) {
            throw new IllegalArgumentException("not a /proc/<pid>/stat line (no '(command)'): " + line);
        }
        return line.substring(open + 1, close);
    }

    /**
     * The stat of a live process, or empty when it has ended (or was never there). Fails only when the process
     * exists and its stat cannot be read.
     */
    public static Optional<Stat> read(long pid) {
        String line;
        try {
            line = Files.readString(Path.of("/proc", Long.toString(pid), "stat"));
        } catch (NoSuchFileException e) {
            return Optional.empty();
        } catch (IOException e) {
            if (!Files.exists(Path.of("/proc", Long.toString(pid)))) {
                return Optional.empty(); // it ended while being read
            }
            throw new UncheckedIOException("could not read /proc/" + pid + "/stat", e);
        }
        return Optional.of(parse(line));
    }

    /** utime + stime of a whole process in clock ticks ({@code -1} if it has ended). */
    public static long processTicks(long pid) {
        return read(pid).map(Stat::ticks).orElse(-1L);
    }

    /** The machine's jiffies ({@code /proc/stat}); zeros where it cannot be read. */
    public static Jiffies machineJiffies() {
        try {
            return parseMachine(Files.readAllLines(Path.of("/proc/stat")).get(0));
        } catch (IOException | RuntimeException e) {
            return new Jiffies(0, 0);
        }
    }

    /** Parses the first line of {@code /proc/stat}. */
    public static Jiffies parseMachine(String cpuLine) {
        String[] f = cpuLine.trim().split(" +");
        if (!f[0].equals("cpu")) {
            throw new IllegalArgumentException("not the first line of /proc/stat: " + cpuLine);
        }
        long total = 0;
        // user nice system idle iowait irq softirq steal (guest and guest_nice are already in user and nice)
        for (int i = 1; i <= Math.min(8, f.length - 1); i++) {
            total += Long.parseLong(f[i]);
        }
        long idle = Long.parseLong(f[4]) + (f.length > 5 ? Long.parseLong(f[5]) : 0);
        return new Jiffies(total - idle, total);
    }

    /** Clock ticks per second ({@code getconf CLK_TCK}); 100, Linux's usual value, if it cannot be run. */
    public static long clockTicks() {
        return ClockTicks.VALUE;
    }

    /** Asked once per JVM. */
    private static final class ClockTicks {
        static final long VALUE = ask();

        private static long ask() {
            try {
                Process p = new ProcessBuilder("getconf", "CLK_TCK").redirectErrorStream(true).start();
                String out = new String(p.getInputStream().readAllBytes()).trim();
                p.waitFor();
                return Long.parseLong(out);
            } catch (IOException | NumberFormatException e) {
                return 100;
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return 100;
            }
        }
    }
}
