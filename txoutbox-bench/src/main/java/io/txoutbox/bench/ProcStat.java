package io.txoutbox.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/** Reads of {@code /proc}: process and machine CPU, load average. */
final class ProcStat {

    private ProcStat() {
    }

    /**
     * utime, stime (clock ticks), ppid, start time, cutime and cstime (reaped children) of a process from its
     * {@code /proc/<pid>/stat} line; the fields are counted after the parenthesised command name, which may
     * itself contain spaces and parentheses.
     */
    static long[] parse(String line) {
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
        return new long[] {Long.parseLong(f[11]), Long.parseLong(f[12]), Long.parseLong(f[1]),
                Long.parseLong(f[19]), Long.parseLong(f[13]), Long.parseLong(f[14])};
    }

    /** The command (thread) name of a {@code /proc/<pid>/stat} line: between the first '(' and the last ')'. */
    static String comm(String line) {
        int open = line.indexOf('(');
        int close = line.lastIndexOf(')');
        if (open < 0 || close < open) {
            throw new IllegalArgumentException("not a /proc/<pid>/stat line (no '(command)'): " + line);
        }
        return line.substring(open + 1, close);
    }

    /** {@link #parse} of a live process, or null if it has ended. */
    static long[] read(long pid) {
        try {
            return parse(Files.readString(Path.of("/proc/" + pid + "/stat")));
        } catch (IOException e) {
            return null;
        }
    }

    /** utime + stime of a whole process in clock ticks ({@code -1} if it has ended). */
    static long processTicks(long pid) {
        long[] s = read(pid);
        return s == null ? -1 : s[0] + s[1];
    }

    /** Busy and total jiffies of all cores ({@code /proc/stat}; busy = total − idle − iowait). */
    static long[] machineJiffies() {
        try {
            return parseMachine(Files.readAllLines(Path.of("/proc/stat")).get(0));
        } catch (IOException | RuntimeException e) {
            return new long[] {0, 0};
        }
    }

    static long[] parseMachine(String cpuLine) {
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
        return new long[] {total - idle, total};
    }

    static String loadAverage() {
        return BenchEnv.loadAverage();
    }

    /** {@code getconf CLK_TCK}, 100 if it cannot be run. */
    static long clockTicks() {
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
