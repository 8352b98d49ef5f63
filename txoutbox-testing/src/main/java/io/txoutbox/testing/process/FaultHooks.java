package io.txoutbox.testing.process;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

/**
 * The test side of the crash-point hook convention, so a test can make a child process die or freeze at an exact
 * point of the production code (e.g. after the broker acked, before the row is marked published).
 *
 * <p>Convention: system property {@value #PROPERTY} = {@code name=action[@n][,name=action[@n]...]}, action
 * {@code kill} (the process SIGKILLs itself) or {@code stop} (it SIGSTOPs itself; the test SIGCONTs it later);
 * {@code @n} = act on the n-th hit of that hook (default 1). Before acting the process prints exactly one line
 * {@code TXOUTBOX-HOOK <name> <action> pid=<pid>} to stdout and flushes.
 */
public final class FaultHooks {

    /** The system property the production code reads. */
    public static final String PROPERTY = "txoutbox.hooks";
    /** First word of the line a firing hook prints. */
    public static final String LINE_PREFIX = "TXOUTBOX-HOOK";

    private static final Pattern NAME = Pattern.compile("[A-Za-z0-9._-]+");
    private static final Pattern LINE = Pattern.compile(
            "^" + LINE_PREFIX + " (" + NAME.pattern() + ") (kill|stop) pid=(\\d+)$");

    private FaultHooks() {
    }

    /** What a hook does when it fires. */
    public enum Action {
        /** The process sends itself SIGKILL. */
        KILL,
        /** The process sends itself SIGSTOP; the test resumes it with SIGCONT. */
        STOP;

        /** The word used in the property and the line: {@code kill} or {@code stop}. */
        public String word() {
            return name().toLowerCase(Locale.ROOT);
        }

        public static Action of(String word) {
            for (Action action : values()) {
                if (action.word().equals(word)) {
                    return action;
                }
            }
            throw new IllegalArgumentException("hook action must be kill or stop, was '" + word + "'");
        }
    }

    /** One hook: act on the {@code hit}-th time {@code name} is reached. */
    public record Hook(String name, Action action, int hit) {
        public Hook {
            Objects.requireNonNull(name, "name");
            Objects.requireNonNull(action, "action");
            if (!NAME.matcher(name).matches()) {
                throw new IllegalArgumentException("hook name must match " + NAME.pattern() + ", was '" + name + "'");
            }
            if (hit < 1) {
                throw new IllegalArgumentException("hook hit must be >= 1, was " + hit + " for " + name);
            }
        }

        /** {@code name=action[@n]}. */
        public String spec() {
            return name + "=" + action.word() + (hit == 1 ? "" : "@" + hit);
        }
    }

    /** A parsed {@code TXOUTBOX-HOOK} line. */
    public record Fired(String name, Action action, long pid) {
    }

    /** The property value for these hooks. */
    public static String format(List<Hook> hooks) {
        return hooks.stream().map(Hook::spec).collect(Collectors.joining(","));
    }

    /** Parses a property value; blank means no hooks. Fails naming the bad entry. */
    public static List<Hook> parse(String value) {
        List<Hook> hooks = new ArrayList<>();
        if (value == null || value.isBlank()) {
            return hooks;
        }
        for (String entry : value.split(",")) {
            String spec = entry.trim();
            int eq = spec.indexOf('=');
            if (eq <= 0) {
                throw new IllegalArgumentException(PROPERTY + " entry must be name=action[@n], was '" + spec + "'");
            }
            String name = spec.substring(0, eq);
            String rest = spec.substring(eq + 1);
            int at = rest.indexOf('@');
            int hit = 1;
            if (at >= 0) {
                try {
                    hit = Integer.parseInt(rest.substring(at + 1));
                } catch (NumberFormatException e) {
                    throw new IllegalArgumentException(PROPERTY + " entry has a bad @n: '" + spec + "'", e);
                }
                rest = rest.substring(0, at);
            }
            hooks.add(new Hook(name, Action.of(rest), hit));
        }
        return hooks;
    }

    /** The exact line a process prints when {@code name} fires with {@code action}. */
    public static String line(String name, Action action, long pid) {
        return LINE_PREFIX + " " + name + " " + action.word() + " pid=" + pid;
    }

    /** Parses a {@code TXOUTBOX-HOOK} line; empty for any other line. */
    public static Optional<Fired> parseLine(String line) {
        Matcher m = LINE.matcher(line.strip());
        if (!m.matches()) {
            return Optional.empty();
        }
        return Optional.of(new Fired(m.group(1), Action.of(m.group(2)), Long.parseLong(m.group(3))));
    }

    /** True if {@code line} reports that hook {@code name} fired. */
    public static boolean isFiredLine(String line, String name) {
        return parseLine(line).map(f -> f.name().equals(name)).orElse(false);
    }

    /**
     * The state letter of a Linux process (field 3 of {@code /proc/<pid>/stat}: R, S, D, T stopped, Z zombie...),
     * or empty if the process no longer exists.
     */
    public static Optional<Character> processState(long pid) {
        return ProcStat.read(pid).map(ProcStat.Stat::state);
    }

    /** True if the process is stopped by a signal (state {@code T}). */
    public static boolean isStopped(long pid) {
        return processState(pid).map(s -> s == 'T').orElse(false);
    }
}
