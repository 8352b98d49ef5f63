package io.txoutbox.testing.process;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** The {@code java} command line of a {@link JvmProcess}: launcher, JVM options, system properties, classpath, main. */
final class JvmCommandLine {

    private JvmCommandLine() {
    }

    /** See {@link JvmProcess#currentClasspath()}. */
    static String currentClasspath() {
        String surefire = System.getProperty("surefire.test.class.path");
        if (surefire != null && !surefire.isBlank()) {
            return surefire;
        }
        return System.getProperty("java.class.path");
    }

    /** See {@link JvmProcess#currentJava()}. */
    static String currentJava() {
        Path java = Path.of(System.getProperty("java.home"), "bin", "java");
        if (Files.isExecutable(java)) {
            return java.toString();
        }
        return ProcessHandle.current().info().command().orElse("java");
    }

    /** The command line; the hooks go into the {@link FaultHooks#PROPERTY} system property. */
    static List<String> of(String java, List<String> jvmArgs, Map<String, String> systemProperties,
                           List<FaultHooks.Hook> hooks, String classpath, String mainClass, List<String> args) {
        List<String> command = new ArrayList<>();
        command.add(java);
        command.addAll(jvmArgs);
        Map<String, String> props = new LinkedHashMap<>(systemProperties);
        if (!hooks.isEmpty()) {
            if (props.containsKey(FaultHooks.PROPERTY)) {
                throw new IllegalStateException("set " + FaultHooks.PROPERTY + " either with hook(...) or "
                        + "systemProperty(...), not both");
            }
            props.put(FaultHooks.PROPERTY, FaultHooks.format(hooks));
        }
        props.forEach((k, v) -> command.add("-D" + k + "=" + v));
        command.add("-cp");
        command.add(classpath);
        command.add(mainClass);
        command.addAll(args);
        return command;
    }
}
