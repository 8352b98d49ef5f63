package io.txoutbox.testing.kafka;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A throw-away PKI for a TLS broker, made with the JDK's {@code keytool} in a directory: a CA, the broker's key pair
 * with a certificate signed by that CA (subject alternative names {@code 127.0.0.1} and {@code localhost}, so
 * hostname verification passes), a truststore holding the CA, and a second truststore holding an unrelated CA (for
 * the "wrong CA" case). All stores are PKCS12 with the password {@link #storePassword()}; certificates are valid for
 * two days. Independent keytool runs go in parallel (about 4 s in all).
 */
public final class TlsMaterial {

    private static final long KEYTOOL_TIMEOUT_SECONDS = 60;

    private final Path dir;
    private final String storePassword;

    private TlsMaterial(Path dir, String storePassword) {
        this.dir = dir;
        this.storePassword = storePassword;
    }

    /** Generates the stores in {@code dir} (created if missing). */
    public static TlsMaterial generate(Path dir) {
        String password = "test-store-" + Long.toHexString(System.nanoTime());
        try {
            Files.createDirectories(dir);
        } catch (IOException e) {
            throw new UncheckedIOException("could not create " + dir, e);
        }
        TlsMaterial m = new TlsMaterial(dir, password);
        m.run(List.of(
                m.keytool("-genkeypair", "-alias", "ca", "-keyalg", "EC", "-groupname", "secp256r1",
                        "-dname", "CN=txoutbox-test-ca", "-ext", "bc:c", "-validity", "2", "-keystore", "ca.p12"),
                m.keytool("-genkeypair", "-alias", "broker", "-keyalg", "EC", "-groupname", "secp256r1",
                        "-dname", "CN=localhost", "-validity", "2", "-keystore", "broker.p12"),
                m.keytool("-genkeypair", "-alias", "other-ca", "-keyalg", "EC", "-groupname", "secp256r1",
                        "-dname", "CN=txoutbox-unrelated-ca", "-ext", "bc:c", "-validity", "2",
                        "-keystore", "other-ca.p12")));
        m.run(List.of(
                m.keytool("-exportcert", "-alias", "ca", "-rfc", "-file", "ca.pem", "-keystore", "ca.p12"),
                m.keytool("-certreq", "-alias", "broker", "-file", "broker.csr", "-keystore", "broker.p12"),
                m.keytool("-exportcert", "-alias", "other-ca", "-rfc", "-file", "other-ca.pem",
                        "-keystore", "other-ca.p12")));
        m.run(List.of(
                m.keytool("-gencert", "-alias", "ca", "-infile", "broker.csr", "-outfile", "broker.pem", "-rfc",
                        "-validity", "2", "-ext", "san=ip:127.0.0.1,dns:localhost", "-keystore", "ca.p12"),
                m.keytool("-importcert", "-alias", "ca", "-file", "ca.pem", "-keystore", "truststore.p12"),
                m.keytool("-importcert", "-alias", "other-ca", "-file", "other-ca.pem",
                        "-keystore", "wrong-truststore.p12")));
        try {
            Files.writeString(dir.resolve("chain.pem"), Files.readString(dir.resolve("broker.pem"))
                    + Files.readString(dir.resolve("ca.pem")), StandardCharsets.US_ASCII);
        } catch (IOException e) {
            throw new UncheckedIOException("could not write the broker's certificate chain in " + dir, e);
        }
        m.run(List.of(m.keytool("-importcert", "-alias", "broker", "-file", "chain.pem", "-keystore", "broker.p12")));
        return m;
    }

    /** The broker's key store: its key and the CA-signed certificate chain. */
    public Path brokerKeystore() {
        return dir.resolve("broker.p12");
    }

    /** A truststore with the CA that signed the broker's certificate. */
    public Path truststore() {
        return dir.resolve("truststore.p12");
    }

    /** A truststore with an unrelated CA only: the broker's certificate does not verify against it. */
    public Path wrongTruststore() {
        return dir.resolve("wrong-truststore.p12");
    }

    /** The password of every store (and of the broker's key). */
    public String storePassword() {
        return storePassword;
    }

    public String storeType() {
        return "PKCS12";
    }

    private ProcessBuilder keytool(String... args) {
        List<String> command = new ArrayList<>();
        command.add(Path.of(System.getProperty("java.home"), "bin", "keytool").toString());
        // a keytool run is short: C1 only and the serial collector halve its start-up
        command.add("-J-XX:TieredStopAtLevel=1");
        command.add("-J-XX:+UseSerialGC");
        command.addAll(List.of(args));
        // PKCS12: the key password is the store password
        command.addAll(List.of("-storetype", "PKCS12", "-storepass", storePassword, "-noprompt"));
        return new ProcessBuilder(command).directory(dir.toFile()).redirectErrorStream(true);
    }

    /** Starts the keytool runs together and waits for all; any failure names the command and its output. */
    private void run(List<ProcessBuilder> commands) {
        List<Process> processes = new ArrayList<>();
        try {
            for (ProcessBuilder pb : commands) {
                processes.add(pb.start());
            }
            for (int i = 0; i < processes.size(); i++) {
                Process p = processes.get(i);
                String output = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
                if (!p.waitFor(KEYTOOL_TIMEOUT_SECONDS, TimeUnit.SECONDS)) {
                    p.destroyForcibly();
                    throw new IllegalStateException("keytool did not finish in " + KEYTOOL_TIMEOUT_SECONDS + " s: "
                            + printable(commands.get(i)));
                }
                if (p.exitValue() != 0) {
                    throw new IllegalStateException("keytool exited " + p.exitValue() + ": "
                            + printable(commands.get(i)) + "\n" + output);
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException("could not run keytool from " + System.getProperty("java.home"), e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while running keytool", e);
        } finally {
            processes.forEach(p -> {
                if (p.isAlive()) {
                    p.destroyForcibly();
                }
            });
        }
    }

    private String printable(ProcessBuilder pb) {
        return String.join(" ", pb.command()).replace(storePassword, "***");
    }

    @Override
    public String toString() {
        return "TlsMaterial[" + dir + "]";
    }
}
