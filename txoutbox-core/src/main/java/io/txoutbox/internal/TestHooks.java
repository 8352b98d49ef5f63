package io.txoutbox.internal;

import java.io.IOException;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Named points in the relays and the partition conversion where fault tests stop a process: {@code -Dtxoutbox.hooks=after-ack-before-mark=kill@3}
 * makes the process SIGKILL itself the third time it reaches that point ({@code stop} SIGSTOPs it instead, for the
 * test to SIGCONT later). Before acting it prints {@code TXOUTBOX-HOOK <name> <action> pid=<pid>} so the test knows
 * the window was hit. Without the property every hook is a single volatile-free check of a static final field.
 */
public final class TestHooks {

    public static final String PROPERTY = "txoutbox.hooks";
    /**
     * Milliseconds after which a {@code stop} hook's SIGSTOP is sent, from another process, while the hit returns at
     * once: a stop that lands late, for the test of what the process does meanwhile. Default 0: sent and waited for.
     */
    public static final String STOP_DELAY_PROPERTY = "txoutbox.hooks.stop-delay-ms";
    public static final String AFTER_SEND_BEFORE_ACK = "after-send-before-ack";
    public static final String AFTER_ACK_BEFORE_MARK = "after-ack-before-mark";
    public static final String AFTER_MARK_BEFORE_COMMIT = "after-mark-before-commit";
    public static final String AFTER_CLAIM = "after-claim";
    /** The partition conversion's steps ({@code io.txoutbox.internal.partition.PartitionConversion}). */
    public static final String CONVERT_BEFORE_SPLIT_COMMIT = "convert-before-split-commit";
    public static final String CONVERT_AFTER_SPLIT = "convert-after-split";
    public static final String CONVERT_AFTER_VALIDATE = "convert-after-validate";
    public static final String CONVERT_AFTER_MOVE = "convert-after-move";
    public static final String CONVERT_BEFORE_SWAP_COMMIT = "convert-before-swap-commit";
    public static final String CONVERT_AFTER_SWAP = "convert-after-swap";

    private record Hook(String action, int onHit, AtomicInteger hits) {
    }

    private static final Map<String, Hook> HOOKS = parse(System.getProperty(PROPERTY));

    private TestHooks() {
    }

    /** Marks that the code reached the named point. */
    public static void hit(String name) {
        if (HOOKS.isEmpty()) {
            return;
        }
        Hook hook = HOOKS.get(name);
        if (hook == null || hook.hits.incrementAndGet() != hook.onHit) {
            return;
        }
        long pid = ProcessHandle.current().pid();
        System.out.println("TXOUTBOX-HOOK " + name + " " + hook.action + " pid=" + pid);
        System.out.flush();
        if (hook.action.equals("stop")) {
            stopUntilResumed(pid);
            return;
        }
        try {
            Process p = new ProcessBuilder("kill", "-KILL", Long.toString(pid)).inheritIO().start();
            p.waitFor();
        } catch (IOException e) {
            // halted below
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        Runtime.getRuntime().halt(137); // in case the signal has not landed yet
    }

    /**
     * Sends this process SIGSTOP and returns only after a SIGCONT: the stop takes effect on each thread on its own
     * time, so without the wait the hitting thread could go on past its point before it is frozen.
     */
    @SuppressWarnings("restriction")
    private static void stopUntilResumed(long pid) {
        java.util.concurrent.CountDownLatch resumed = new java.util.concurrent.CountDownLatch(1);
        sun.misc.Signal.handle(new sun.misc.Signal("CONT"), s -> resumed.countDown());
        long delayMs = Long.getLong(STOP_DELAY_PROPERTY, 0);
        try {
            Process p = delayMs > 0
                    ? new ProcessBuilder("sh", "-c", "sleep " + delayMs / 1000.0 + "; kill -STOP " + pid).inheritIO()
                            .start()
                    : new ProcessBuilder("kill", "-STOP", Long.toString(pid)).inheritIO().start();
            if (delayMs == 0) {
                p.waitFor();
            }
            resumed.await();
        } catch (IOException e) {
            System.out.println("TXOUTBOX-HOOK could not stop: " + e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    static Map<String, Hook> parse(String spec) {
        Map<String, Hook> hooks = new HashMap<>();
        if (spec == null || spec.isBlank()) {
            return Map.of();
        }
        for (String part : spec.split(",")) {
            String[] kv = part.trim().split("=", 2);
            if (kv.length != 2) {
                throw new IllegalArgumentException(PROPERTY + ": expected name=action[@n], got '" + part + "'");
            }
            String action = kv[1];
            int onHit = 1;
            int at = action.indexOf('@');
            if (at >= 0) {
                onHit = Integer.parseInt(action.substring(at + 1));
                action = action.substring(0, at);
            }
            if (!action.equals("kill") && !action.equals("stop")) {
                throw new IllegalArgumentException(PROPERTY + ": action must be kill or stop, got '" + action + "'");
            }
            hooks.put(kv[0], new Hook(action, onHit, new AtomicInteger()));
        }
        return Map.copyOf(hooks);
    }
}
