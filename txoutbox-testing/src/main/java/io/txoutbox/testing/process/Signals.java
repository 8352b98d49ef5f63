package io.txoutbox.testing.process;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;

/** Sends POSIX signals Java has no API for (STOP, CONT, QUIT) through {@code kill(1)}. */
public final class Signals {

    private Signals() {
    }

    /** Sends {@code signal} (a name without {@code SIG}: {@code STOP}, {@code QUIT}) to process {@code pid}. */
    public static void send(long pid, String signal) {
        Process kill;
        try {
            kill = new ProcessBuilder("kill", "-" + signal, Long.toString(pid)).redirectErrorStream(true).start();
        } catch (IOException e) {
            throw new UncheckedIOException("could not run kill -" + signal + " " + pid, e);
        }
        try {
            if (!kill.waitFor(10, TimeUnit.SECONDS)) {
                kill.destroyForcibly();
                throw new IllegalStateException("kill -" + signal + " " + pid + " did not finish in 10 s");
            }
            if (kill.exitValue() != 0) {
                String out = new String(kill.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
                throw new IllegalStateException("kill -" + signal + " " + pid + " failed (" + kill.exitValue() + "): " + out);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while sending " + signal + " to " + pid, e);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
