package io.txoutbox.testing.process;

import java.io.IOException;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A stand-alone reimplementation of the production side of the hook convention (deliberately not using
 * {@link FaultHooks}), so the tests check that what {@link JvmProcess.Builder#hook} writes is understood by an
 * independent reader of {@code txoutbox.hooks}.
 */
final class TestHooks {

    private record Spec(String action, int hit) {
    }

    private static final Map<String, Spec> SPECS = parse(System.getProperty("txoutbox.hooks", ""));
    private static final Map<String, AtomicInteger> HITS = new ConcurrentHashMap<>();

    private TestHooks() {
    }

    static void hit(String name) {
        Spec spec = SPECS.get(name);
        if (spec == null) {
            return;
        }
        int n = HITS.computeIfAbsent(name, k -> new AtomicInteger()).incrementAndGet();
        if (n != spec.hit()) {
            return;
        }
        long pid = ProcessHandle.current().pid();
        System.out.println("TXOUTBOX-HOOK " + name + " " + spec.action() + " pid=" + pid);
        System.out.flush();
        String signal = spec.action().equals("kill") ? "-KILL" : "-STOP";
        // a stop takes effect on each thread on its own time: wait for the SIGCONT, or this thread may run on first
        java.util.concurrent.CountDownLatch resumed = new java.util.concurrent.CountDownLatch(1);
        if (!spec.action().equals("kill")) {
            sun.misc.Signal.handle(new sun.misc.Signal("CONT"), s -> resumed.countDown());
        }
        try {
            new ProcessBuilder("kill", signal, Long.toString(pid)).start().waitFor();
            if (!spec.action().equals("kill")) {
                resumed.await();
            }
        } catch (IOException e) {
            throw new IllegalStateException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        if (spec.action().equals("kill")) {
            Runtime.getRuntime().halt(99); // not reached: SIGKILL has already ended the process
        }
    }

    private static Map<String, Spec> parse(String value) {
        Map<String, Spec> specs = new HashMap<>();
        for (String entry : value.split(",")) {
            if (entry.isBlank()) {
                continue;
            }
            String[] nameAndRest = entry.split("=", 2);
            String[] actionAndHit = nameAndRest[1].split("@", 2);
            int hit = actionAndHit.length == 2 ? Integer.parseInt(actionAndHit[1]) : 1;
            specs.put(nameAndRest[0], new Spec(actionAndHit[0], hit));
        }
        return specs;
    }
}
