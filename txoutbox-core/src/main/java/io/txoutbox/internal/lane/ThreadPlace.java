package io.txoutbox.internal.lane;

import java.util.ArrayList;
import java.util.List;

/**
 * Where a thread is now, in one log-friendly line: its state and its top frames, innermost first
 * ({@code WAITING in SynchronousQueue.poll ← ConcurrentBag.borrow ← HikariPool.getConnection ← …}). Said when a
 * lane is not ready in time, so that the log names what it waits for (the pool, the database, the transport).
 */
public final class ThreadPlace {

    /** Frames of the JDK's own concurrency plumbing are skipped until the first one that says what waits. */
    private static final List<String> PLUMBING = List.of("java.lang.Object.wait", "jdk.internal.misc.Unsafe.park",
            "java.util.concurrent.locks.LockSupport.park", "java.util.concurrent.locks.AbstractQueuedSynchronizer",
            "java.util.concurrent.SynchronousQueue$Trans", "java.util.concurrent.LinkedTransferQueue",
            "java.lang.Thread.sleep", "java.lang.Thread.sleep0");

    private ThreadPlace() {
    }

    /** {@code thread}'s state and up to {@code frames} of its frames past the JDK's parking plumbing. */
    public static String of(Thread thread, int frames) {
        return describe(thread.getState(), thread.getStackTrace(), frames);
    }

    /** {@code state} and up to {@code frames} of {@code stack} (a thread's, innermost first) past the plumbing. */
    public static String describe(Thread.State state, StackTraceElement[] stack, int frames) {
        if (stack.length == 0) {
            return state + " (no frames: " + (state == Thread.State.TERMINATED ? "ended" : "not started") + ")";
        }
        int first = 0;
        while (first < stack.length - 1 && isPlumbing(stack[first])) {
            first++;
        }
        List<String> names = new ArrayList<>();
        for (int i = first; i < stack.length && names.size() < frames; i++) {
            names.add(simpleName(stack[i]));
        }
        return state + " in " + String.join(" ← ", names) + (first + frames < stack.length ? " ← …" : "");
    }

    private static boolean isPlumbing(StackTraceElement frame) {
        String name = frame.getClassName() + "." + frame.getMethodName();
        for (String plumbing : PLUMBING) {
            if (name.startsWith(plumbing)) {
                return true;
            }
        }
        return false;
    }

    private static String simpleName(StackTraceElement frame) {
        String cls = frame.getClassName();
        return cls.substring(cls.lastIndexOf('.') + 1) + "." + frame.getMethodName()
                + (frame.getLineNumber() > 0 ? ":" + frame.getLineNumber() : "");
    }
}
