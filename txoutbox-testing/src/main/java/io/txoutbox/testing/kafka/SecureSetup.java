package io.txoutbox.testing.kafka;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.locks.LockSupport;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ScramCredentialInfo;
import org.apache.kafka.clients.admin.ScramMechanism;
import org.apache.kafka.clients.admin.UserScramCredentialUpsertion;
import org.apache.kafka.clients.admin.UserScramCredentialsDescription;

/** The broker settings of {@link KafkaBroker.Builder#secure()} and its SCRAM user. */
final class SecureSetup {

    static final String SCRAM_USER = "txoutbox-app";
    private static final Duration USER_TIMEOUT = Duration.ofSeconds(30);

    private SecureSetup() {
    }

    /**
     * Listeners PLAINTEXT ({@code ports[0]}, also inter-broker), CONTROLLER ({@code ports[1]}), SSL ({@code ports[2]})
     * and SASL_SSL with SCRAM-SHA-512 ({@code ports[3]}); the broker's key store for both TLS listeners, no client
     * certificates.
     */
    static Map<String, String> brokerProperties(int[] ports, TlsMaterial tls) {
        Map<String, String> p = new LinkedHashMap<>();
        p.put("listeners", "PLAINTEXT://127.0.0.1:" + ports[0] + ",CONTROLLER://127.0.0.1:" + ports[1]
                + ",SSL://127.0.0.1:" + ports[2] + ",SASL_SSL://127.0.0.1:" + ports[3]);
        p.put("advertised.listeners", "PLAINTEXT://127.0.0.1:" + ports[0] + ",SSL://127.0.0.1:" + ports[2]
                + ",SASL_SSL://127.0.0.1:" + ports[3]);
        p.put("listener.security.protocol.map", "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,SSL:SSL,SASL_SSL:SASL_SSL");
        p.put("ssl.keystore.type", tls.storeType());
        p.put("ssl.keystore.location", tls.brokerKeystore().toString());
        p.put("ssl.keystore.password", tls.storePassword());
        p.put("ssl.key.password", tls.storePassword());
        p.put("ssl.client.auth", "none");
        p.put("sasl.enabled.mechanisms", "SCRAM-SHA-512");
        p.put("listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config",
                "org.apache.kafka.common.security.scram.ScramLoginModule required;");
        return p;
    }

    /**
     * Creates {@code user} with a fresh SCRAM-SHA-512 password over the PLAINTEXT listener and waits until the broker
     * knows the credential; returns the password.
     */
    static String createScramUser(String plaintextBootstrap, String user) {
        String password = "scram-pw-" + Long.toHexString(Double.doubleToLongBits(Math.random()));
        try (Admin admin = BrokerSetup.admin(plaintextBootstrap)) {
            admin.alterUserScramCredentials(List.of(new UserScramCredentialUpsertion(user,
                            new ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096), password)))
                    .all().get(USER_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
            long deadline = System.nanoTime() + USER_TIMEOUT.toNanos();
            while (true) {
                try {
                    Map<String, UserScramCredentialsDescription> users = admin.describeUserScramCredentials(
                            List.of(user)).all().get(5, TimeUnit.SECONDS);
                    if (users.containsKey(user) && !users.get(user).credentialInfos().isEmpty()) {
                        return password;
                    }
                } catch (ExecutionException e) {
                    // not visible yet (ResourceNotFoundException): poll again
                }
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException("SCRAM user " + user + " not visible after " + USER_TIMEOUT);
                }
                LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(50));
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while creating SCRAM user " + user, e);
        } catch (ExecutionException | TimeoutException e) {
            throw new IllegalStateException("could not create SCRAM user " + user + " on " + plaintextBootstrap, e);
        }
    }
}
