package io.txoutbox.testing.process;

import java.io.BufferedWriter;
import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Predicate;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A main class run in its own JVM, so a test can SIGKILL, SIGSTOP or SIGTERM it the way an operator or the kernel
 * would, which no in-process thread can imitate. Its stdout and stderr are read line by line into memory (for
 * {@link #awaitLine}) and appended to a log file (to read after a failure), never to the test's own output.
 *
 * <pre>{@code
 * try (JvmProcess relay = JvmProcess.builder(RelayMain.class).hook("after-ack-before-mark", "kill").start()) {
 *     relay.awaitHook("after-ack-before-mark", Duration.ofSeconds(30));
 *     relay.awaitExit(Duration.ofSeconds(10));
 * }
 * }</pre>
 *
 * <p>Signals other than KILL and TERM go through {@code kill(1)}; process states are read from {@code /proc}, so
 * this class is Linux-only.
 */
public final class JvmProcess implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(JvmProcess.class);
    private static final Duration KILL_WAIT = Duration.ofSeconds(15);

    private final String name;
    private final Process process;
    private final Path logFile;
    private final Path ownTempDir;
    private final ProcessOutput output;
    private final AtomicBoolean closed = new AtomicBoolean();

    private JvmProcess(String name, Process process, Path logFile, Path ownTempDir, int maxLines,
                       BufferedWriter logWriter) {
        this.name = name;
        this.process = process;
        this.logFile = logFile;
        this.ownTempDir = ownTempDir;
        this.output = new ProcessOutput(name, describe(), process, maxLines, logWriter);
    }

    public static Builder builder(Class<?> mainClass) {
        return new Builder(mainClass.getName());
    }

    public static Builder builder(String mainClass) {
        return new Builder(mainClass);
    }

    /**
     * The classpath of this JVM for a child. Under Maven surefire/failsafe {@code java.class.path} may be a
     * manifest-only booter jar; their {@code surefire.test.class.path} property holds the real one.
     */
    public static String currentClasspath() {
        return JvmCommandLine.currentClasspath();
    }

    /** The {@code java} launcher of this JVM. */
    public static String currentJava() {
        return JvmCommandLine.currentJava();
    }

    public String name() {
        return name;
    }

    public long pid() {
        return process.pid();
    }

    public boolean isAlive() {
        return process.isAlive();
    }

    /** The exit code once the process has exited (128+signal if a signal killed it). */
    public OptionalInt exitCode() {
        return process.isAlive() ? OptionalInt.empty() : OptionalInt.of(process.exitValue());
    }

    /** The file its stdout and stderr are appended to. */
    public Path logFile() {
        return logFile;
    }

    /** The output lines kept in memory so far (the oldest are dropped beyond the builder's maxLines). */
    public List<String> lines() {
        return output.lines();
    }

    /** The last {@code n} output lines, joined, for failure messages. */
    public String tail(int n) {
        return output.tail(n);
    }

    /**
     * Waits for the first output line (from the start of the process) that matches, and returns it. Fails when the
     * timeout passes or the process closed its output without such a line.
     */
    public String awaitLine(Predicate<String> matcher, Duration timeout) {
        return output.awaitLine(matcher, timeout);
    }

    /** Waits for a line in which {@code regex} is found (not necessarily the whole line). */
    public String awaitLine(String regex, Duration timeout) {
        Pattern pattern = Pattern.compile(regex);
        return awaitLine(line -> pattern.matcher(line).find(), timeout);
    }

    /** Waits for the {@code TXOUTBOX-HOOK <name> ...} line of hook {@code hookName}. */
    public FaultHooks.Fired awaitHook(String hookName, Duration timeout) {
        String line = awaitLine(l -> FaultHooks.isFiredLine(l, hookName), timeout);
        return FaultHooks.parseLine(line).orElseThrow();
    }

    /** SIGKILL, then waits until the process is gone. Idempotent. */
    public void kill() {
        if (process.isAlive()) {
            log.info("{}: SIGKILL", describe());
            // ProcessHandle, not Process: Process.destroy*() also closes our ends of the pipes and loses output
            process.toHandle().destroyForcibly();
        }
        awaitExit(KILL_WAIT);
    }

    /** SIGTERM (graceful shutdown; JVM shutdown hooks run). Does not wait: see {@link #awaitExit}. */
    public void terminate() {
        if (process.isAlive()) {
            log.info("{}: SIGTERM", describe());
            // ProcessHandle, not Process: Process.destroy() closes the pipes and would lose shutdown output
            process.toHandle().destroy();
        }
    }

    /** SIGSTOP, then waits until {@code /proc} shows the process stopped. */
    public void pause() {
        log.info("{}: SIGSTOP", describe());
        Signals.send(pid(), "STOP");
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (!isStopped()) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException(describe() + " not stopped 10 s after SIGSTOP, state " + state());
            }
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(2));
        }
    }

    /** SIGCONT. */
    public void resume() {
        log.info("{}: SIGCONT", describe());
        Signals.send(pid(), "CONT");
    }

    /** True while the process is stopped by a signal (SIGSTOP, or a {@code stop} hook). */
    public boolean isStopped() {
        return FaultHooks.isStopped(pid());
    }

    /** The Linux process state letter, empty once the process is gone. */
    public Optional<Character> state() {
        return FaultHooks.processState(pid());
    }

    /** Waits for the process to exit and returns its exit code; fails after {@code timeout}. */
    public int awaitExit(Duration timeout) {
        try {
            if (!process.waitFor(timeout.toNanos(), TimeUnit.NANOSECONDS)) {
                throw new IllegalStateException(describe() + " still running after " + timeout + " (state "
                        + state().map(String::valueOf).orElse("?") + "); last lines:\n" + tail(30));
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while waiting for " + describe() + " to exit", e);
        }
        output.joinReaders(Duration.ofSeconds(5));
        return process.exitValue();
    }

    /** Kills the process if it is still alive and releases the log file. Idempotent. */
    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        try {
            if (process.isAlive()) {
                process.destroyForcibly();
                try {
                    process.waitFor(KILL_WAIT.toMillis(), TimeUnit.MILLISECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
            output.joinReaders(Duration.ofSeconds(5));
        } finally {
            output.closeLog(logFile);
            if (ownTempDir != null) {
                deleteRecursively(ownTempDir);
            }
        }
    }

    @Override
    public String toString() {
        return describe();
    }

    private String describe() {
        return "JvmProcess " + name + " (pid " + process.pid() + ")";
    }


    static void deleteRecursively(Path dir) {
        if (!Files.exists(dir)) {
            return;
        }
        try (Stream<Path> paths = Files.walk(dir)) {
            paths.sorted(Comparator.reverseOrder()).forEach(p -> {
                try {
                    Files.deleteIfExists(p);
                } catch (IOException e) {
                    log.warn("could not delete {}", p, e);
                }
            });
        } catch (IOException e) {
            log.warn("could not delete {}", dir, e);
        }
    }

    /** Options of a {@link JvmProcess}. */
    public static final class Builder {
        private final String mainClass;
        private String name;
        private String classpath = currentClasspath();
        private String java = currentJava();
        private final Map<String, String> systemProperties = new LinkedHashMap<>();
        /**
         * C1 only and the serial collector, before the caller's options (a later option wins, e.g.
         * {@code -XX:TieredStopAtLevel=4}): the processes tests start are short-lived, and on a 2-core machine C2's
         * compile threads and G1's concurrent threads take CPU from what is being tested.
         */
        private final List<String> jvmArgs = new ArrayList<>(List.of("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC"));
        private final List<String> args = new ArrayList<>();
        private final Map<String, String> env = new LinkedHashMap<>();
        private final List<FaultHooks.Hook> hooks = new ArrayList<>();
        private Path logFile;
        private Path workingDirectory;
        private int maxLines = 100_000;

        private Builder(String mainClass) {
            this.mainClass = Objects.requireNonNull(mainClass, "mainClass");
            this.name = mainClass.substring(mainClass.lastIndexOf('.') + 1);
        }

        /** Short name for logs and thread names (default: the main class's simple name). */
        public Builder name(String name) {
            this.name = Objects.requireNonNull(name, "name");
            return this;
        }

        public Builder classpath(String classpath) {
            this.classpath = Objects.requireNonNull(classpath, "classpath");
            return this;
        }

        public Builder java(String javaExecutable) {
            this.java = Objects.requireNonNull(javaExecutable, "java");
            return this;
        }

        public Builder systemProperty(String key, String value) {
            systemProperties.put(Objects.requireNonNull(key, "key"), Objects.requireNonNull(value, "value"));
            return this;
        }

        public Builder jvmArgs(String... jvmArgs) {
            this.jvmArgs.addAll(List.of(jvmArgs));
            return this;
        }

        public Builder args(String... args) {
            this.args.addAll(List.of(args));
            return this;
        }

        public Builder env(String key, String value) {
            env.put(Objects.requireNonNull(key, "key"), Objects.requireNonNull(value, "value"));
            return this;
        }

        /** Makes hook {@code name} perform {@code action} ({@code kill} or {@code stop}) on its first hit. */
        public Builder hook(String name, String action) {
            return hook(name, action, 1);
        }

        /** Makes hook {@code name} perform {@code action} on its {@code hit}-th hit. */
        public Builder hook(String name, String action, int hit) {
            return hook(new FaultHooks.Hook(name, FaultHooks.Action.of(action), hit));
        }

        public Builder hook(FaultHooks.Hook hook) {
            hooks.add(Objects.requireNonNull(hook, "hook"));
            return this;
        }

        /** Where output goes (appended). Default: a temp file deleted by {@link JvmProcess#close()}. */
        public Builder logFile(Path logFile) {
            this.logFile = Objects.requireNonNull(logFile, "logFile");
            return this;
        }

        public Builder workingDirectory(Path dir) {
            this.workingDirectory = Objects.requireNonNull(dir, "workingDirectory");
            return this;
        }

        /** Output lines kept in memory (older ones are dropped, the log file keeps all). */
        public Builder maxLines(int maxLines) {
            if (maxLines < 1) {
                throw new IllegalArgumentException("jvmProcess.maxLines must be >= 1, was " + maxLines);
            }
            this.maxLines = maxLines;
            return this;
        }

        /** The command line {@link #start()} runs. */
        public List<String> command() {
            return JvmCommandLine.of(java, jvmArgs, systemProperties, hooks, classpath, mainClass, args);
        }

        /** Starts the process; it runs until it exits or is killed. */
        public JvmProcess start() {
            List<String> command = command();
            Path ownTempDir = null;
            Path file = logFile;
            BufferedWriter writer;
            try {
                if (file == null) {
                    ownTempDir = Files.createTempDirectory("txoutbox-jvm-" + name + "-");
                    file = ownTempDir.resolve(name + ".log");
                } else if (file.getParent() != null) {
                    Files.createDirectories(file.getParent());
                }
                writer = Files.newBufferedWriter(file, StandardCharsets.UTF_8, StandardOpenOption.CREATE,
                        StandardOpenOption.APPEND);
            } catch (IOException e) {
                throw new UncheckedIOException("could not create the log file for " + name, e);
            }
            ProcessBuilder pb = new ProcessBuilder(command);
            pb.environment().putAll(env);
            if (workingDirectory != null) {
                pb.directory(workingDirectory.toFile());
            }
            Process process;
            try {
                process = pb.start();
            } catch (IOException e) {
                try {
                    writer.close();
                } catch (IOException ignored) {
                    // failing anyway
                }
                if (ownTempDir != null) {
                    deleteRecursively(ownTempDir);
                }
                throw new UncheckedIOException("could not start " + mainClass + " with " + java, e);
            }
            JvmProcess jvm = new JvmProcess(name, process, file, ownTempDir, maxLines, writer);
            log.info("{} started: main {}, log {}, hooks {}", jvm.describe(), mainClass, file,
                    hooks.isEmpty() ? "none" : FaultHooks.format(hooks));
            log.debug("{} command: {}", jvm.describe(), String.join(" ", command).replace(classpath,
                    "<" + classpath.split(File.pathSeparator).length + " classpath entries>"));
            jvm.output.start();
            return jvm;
        }
    }
}
