package io.txoutbox.testing.docs;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * A committed file that a test generates from the code (the configuration reference, the starter's configuration
 * metadata): {@link #check} fails when the committed file differs from what the code says, naming the command that
 * rewrites it, and with {@code -D}{@value #WRITE}{@code =true} it rewrites the file instead.
 */
public final class GeneratedFile {

    /** The system property that makes {@link #check} write the file instead of comparing it. */
    public static final String WRITE = "txoutbox.docs.write";

    private GeneratedFile() {
    }

    /**
     * Compares {@code file} with {@code generated}, or writes it when {@value #WRITE} is set; {@code regenerate} is the
     * command line that rewrites it, for the failure message.
     */
    public static void check(Path file, String generated, String regenerate) {
        try {
            if (Boolean.getBoolean(WRITE)) {
                Files.createDirectories(file.getParent());
                Files.writeString(file, generated, StandardCharsets.UTF_8);
                return;
            }
            String committed = Files.exists(file) ? Files.readString(file, StandardCharsets.UTF_8) : "";
            assertEquals(generated, committed, () -> file + " is out of date with the code that generates it;"
                    + " regenerate it with:" + System.lineSeparator() + "  " + regenerate);
        } catch (IOException e) {
            throw new UncheckedIOException(file + ": " + e.getMessage(), e);
        }
    }

    /** {@code relative} inside the module under test ({@code basedir}, which Maven sets; else the working directory). */
    public static Path inModule(String relative) {
        Path module = Path.of(System.getProperty("basedir", System.getProperty("user.dir")));
        return module.toAbsolutePath().resolve(relative);
    }
}
