package io.txoutbox.testing.process;

import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The stdout and stderr of a {@link JvmProcess}: read line by line by two threads, kept in memory (the newest
 * {@code maxLines}) for {@link #awaitLine} and appended to the log file.
 */
final class ProcessOutput {

    private static final Logger log = LoggerFactory.getLogger(JvmProcess.class);

    private final String name;
    private final String description;
    private final Process process;
    private final int maxLines;
    private final Object lock = new Object();
    private final Deque<String> lines = new ArrayDeque<>();
    private long dropped;
    private int openStreams = 2;
    private final BufferedWriter logWriter;
    private final List<Thread> readers = new ArrayList<>(2);

    /** The output of {@code process}; {@code description} names it in messages. */
    ProcessOutput(String name, String description, Process process, int maxLines, BufferedWriter logWriter) {
        this.name = name;
        this.description = description;
        this.process = process;
        this.maxLines = maxLines;
        this.logWriter = logWriter;
    }

    /** Starts the threads that read stdout and stderr. */
    void start() {
        startReader(process.getInputStream(), "out");
        startReader(process.getErrorStream(), "err");
    }

    /** The output lines kept in memory so far (the oldest are dropped beyond the builder's maxLines). */
    List<String> lines() {
        synchronized (lock) {
            return List.copyOf(lines);
        }
    }

    /** The last {@code n} output lines, joined, for failure messages. */
    String tail(int n) {
        synchronized (lock) {
            List<String> all = new ArrayList<>(lines);
            return String.join("\n", all.subList(Math.max(0, all.size() - n), all.size()));
        }
    }

    /**
     * Waits for the first output line (from the start of the process) that matches, and returns it. Fails when the
     * timeout passes or the process closed its output without such a line.
     */
    String awaitLine(Predicate<String> matcher, Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        long seen = 0; // absolute index of the next line to test
        synchronized (lock) {
            while (true) {
                long first = dropped;
                if (seen < first) {
                    seen = first;
                }
                int offset = (int) (seen - first);
                int index = 0;
                for (String line : lines) {
                    if (index++ < offset) {
                        continue;
                    }
                    seen++;
                    if (matcher.test(line)) {
                        return line;
                    }
                }
                if (openStreams == 0) {
                    throw new IllegalStateException(describe() + " closed its output (exit "
                            + exitText() + ") without a matching line; last lines:\n" + tail(30));
                }
                long remaining = deadline - System.nanoTime();
                if (remaining <= 0) {
                    throw new IllegalStateException(describe() + " printed no matching line within " + timeout
                            + "; last lines:\n" + tail(30));
                }
                try {
                    TimeUnit.NANOSECONDS.timedWait(lock, remaining);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new IllegalStateException("interrupted while waiting for output of " + describe(), e);
                }
            }
        }
    }

    /** Closes the log file; lines read after this are kept in memory only. */
    void closeLog(Path logFile) {
        synchronized (lock) {
            try {
                logWriter.close();
            } catch (IOException e) {
                log.warn("{}: could not close log file {}", describe(), logFile, e);
            }
        }
    }

    private String describe() {
        return description;
    }

    private String exitText() {
        return process.isAlive() ? "still running" : Integer.toString(process.exitValue());
    }

    void joinReaders(Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        for (Thread reader : readers) {
            long remainingMs = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
            if (remainingMs <= 0) {
                return;
            }
            try {
                reader.join(remainingMs);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
    }

    private void startReader(InputStream stream, String streamName) {
        Thread reader = new Thread(() -> readLines(stream), "txoutbox-testing-jvm-" + name + "-" + streamName);
        reader.setDaemon(true);
        readers.add(reader);
        reader.start();
    }

    private void readLines(InputStream stream) {
        try (BufferedReader in = new BufferedReader(new InputStreamReader(stream, StandardCharsets.UTF_8))) {
            String line;
            while ((line = in.readLine()) != null) {
                onLine(line);
            }
        } catch (IOException e) {
            // the stream closes when the process dies; nothing else is expected here
            log.debug("{}: output stream ended: {}", describe(), e.toString());
        } catch (Throwable t) {
            log.error("{}: output reader failed", describe(), t);
        } finally {
            synchronized (lock) {
                openStreams--;
                try {
                    logWriter.flush();
                } catch (IOException ignored) {
                    // file already closed by close()
                }
                lock.notifyAll();
            }
        }
    }

    private void onLine(String line) {
        synchronized (lock) {
            lines.addLast(line);
            if (lines.size() > maxLines) {
                lines.removeFirst();
                dropped++;
            }
            try {
                logWriter.write(line);
                logWriter.newLine();
                logWriter.flush();
            } catch (IOException e) {
                // the log file is a convenience; the in-memory lines are what tests wait on
                log.debug("{}: could not write log file: {}", describe(), e.toString());
            }
            lock.notifyAll();
        }
    }
}
