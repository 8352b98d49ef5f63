package io.txoutbox.kafka.internal;

import io.txoutbox.OutboxException;
import io.txoutbox.spi.SendResult;
import java.security.cert.CertPathBuilderException;
import java.security.cert.CertPathValidatorException;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.BiFunction;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.kafka.common.errors.AuthenticationException;
import org.apache.kafka.common.errors.SaslAuthenticationException;
import org.apache.kafka.common.errors.SslAuthenticationException;
import org.apache.kafka.common.errors.TimeoutException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Connection failures that a client setting causes — the broker's certificate not trusted, SASL credentials refused,
 * a {@code security.protocol} that does not match the listener — told in words that name the setting to fix, and
 * logged once per streak of failures (not per batch or per poll) by one client: the transport (all its lanes) or one
 * inbox consumer. The messages never contain a setting's value except the truststore's location, the user name and
 * the broker address; Kafka's own errors carry no secret either.
 *
 * <p>Kafka reports a refused certificate or password as an {@link AuthenticationException}. A plaintext client at a
 * TLS listener (or the reverse) only sees the connection drop and then a {@link TimeoutException}; for that case the
 * listener is asked what it speaks ({@link ListenerProbe}), once per streak (again later when it did not answer), and
 * only a mismatch is reported. An unencrypted client is not even made while the listener answers TLS
 * ({@link #beforeClient}): it would allocate ~336 MB per connection attempt.
 */
final class ConnectionTrouble {

    private static final Logger log = LoggerFactory.getLogger(ConnectionTrouble.class);
    private static final int PROBE_TIMEOUT_MS = 1_000;
    /**
     * How long a listener may take to answer before a client is made: a loaded TLS listener's alert must not come
     * too late and let the client that allocates per connection attempt be made. A listener answers in milliseconds;
     * this is waited out only when it does not answer at all (a client is made then).
     */
    private static final int BEFORE_CLIENT_TIMEOUT_MS = 5_000;
    private static final int MAX_PROBED_SERVERS = 3;
    /** How many of the brokers a bootstrap listener advertises are asked before a client is made. */
    private static final int MAX_PROBED_ADVERTISED = 8;
    /** How soon a probe that got no conclusive answer may be asked again in the same streak. */
    static final java.time.Duration REPROBE_AFTER = java.time.Duration.ofSeconds(5);
    private static final Pattern JAAS_USER = Pattern.compile("username\\s*=\\s*\"([^\"]*)\"");

    private final String client;
    private final Map<String, ?> settings;
    private final BiFunction<String, Integer, ListenerProbe.Answer> probe;
    /** The brokers a listener advertises ({@link ListenerProbe#advertised}). */
    private final BiFunction<String, Integer, List<String>> advertised;
    private final java.util.function.LongSupplier nanoTime;
    /** The message logged in the current streak; null when the last attempt got through or nothing was logged. */
    private String reported;
    private boolean probed;
    private String probeFinding;
    /** When the listener was last asked before a client was made (nanoTime); null: never. */
    private Long clientCheckedAt;
    /** What that answer said: why no client may be made, or null. */
    private String clientRefusal;
    /** When the streak's last probe got no conclusive answer (nanoTime); null when none did. */
    private Long inconclusiveAt;

    /**
     * @param client how the log names the client, e.g. {@code "txoutbox-kafka"} or {@code "txoutbox-kafka-inbox
     *     billing"}
     * @param settings the client's properties (read for bootstrap.servers, security.protocol, the truststore's
     *     location, sasl.mechanism and the user name in sasl.jaas.config)
     */
    ConnectionTrouble(String client, Map<String, ?> settings) {
        this(client, settings, ListenerProbe::probe, ListenerProbe::advertised, System::nanoTime);
    }

    /** With {@code probe} for the listeners and no advertised broker asked. */
    ConnectionTrouble(String client, Map<String, ?> settings, BiFunction<String, Integer, ListenerProbe.Answer> probe) {
        this(client, settings, probe, System::nanoTime);
    }

    ConnectionTrouble(String client, Map<String, ?> settings, BiFunction<String, Integer, ListenerProbe.Answer> probe,
            java.util.function.LongSupplier nanoTime) {
        this(client, settings, probe, (server, timeout) -> List.of(), nanoTime);
    }

    ConnectionTrouble(String client, Map<String, ?> settings, BiFunction<String, Integer, ListenerProbe.Answer> probe,
            BiFunction<String, Integer, List<String>> advertised, java.util.function.LongSupplier nanoTime) {
        this.client = client;
        this.settings = java.util.Collections.unmodifiableMap(new java.util.HashMap<>(settings));
        this.probe = probe;
        this.advertised = advertised;
        this.nanoTime = nanoTime;
    }

    // ---- the relay's side -----------------------------------------------------------------------------------

    /**
     * Reviews one batch's results: failures caused by the connection's settings become {@code UNAVAILABLE} (the
     * relay backs off and counts no attempt: the events are not at fault) with the clear message as the cause; the
     * message is logged once per streak. A delivered record ends the streak.
     */
    List<SendResult> review(String lane, List<SendResult> results) {
        if (results.stream().anyMatch(SendResult::isDelivered)) {
            connected(); // a partial failure is the records' or the partitions' business, not the connection's
            return results;
        }
        String message = null;
        for (SendResult r : results) {
            if (r instanceof SendResult.Failed f && f.kind() != SendResult.Kind.COLLATERAL) {
                message = explain(f.cause());
                if (message != null) {
                    break;
                }
            }
        }
        if (message == null) {
            return results;
        }
        report(message, "lane " + lane + " and the others of this transport keep their events pending and retry "
                + "with the relay's outage backoff");
        List<SendResult> reviewed = new ArrayList<>(results.size());
        for (SendResult r : results) {
            if (r instanceof SendResult.Failed f && f.kind() != SendResult.Kind.COLLATERAL && isConnection(f.cause())) {
                reviewed.add(SendResult.unavailable(new OutboxException(message, f.cause(), true)));
            } else {
                reviewed.add(r);
            }
        }
        return reviewed;
    }

    /** The lane could not create or initialise its producer: the usual warning, unless this streak was explained. */
    void noProducer(String lane, RuntimeException e, int records) {
        if (explained()) {
            log.debug("{}: lane {}: no producer ({}); {} records will be retried", client, lane, e.toString(), records);
        } else {
            log.warn("{}: lane {}: no producer ({}); {} records will be retried", client, lane, e.toString(), records);
        }
    }

    /** Whether the current streak's trouble was logged in words already. */
    synchronized boolean explained() {
        return reported != null;
    }

    // ---- both sides -----------------------------------------------------------------------------------------

    /**
     * Asked before a Kafka client (producer, consumer) is made with these settings: null to make it, or the clear
     * message why not. A client whose {@code security.protocol} is unencrypted (PLAINTEXT, SASL_PLAINTEXT) must not be
     * made against a TLS listener: each of its connection attempts reads the listener's TLS alert as the size of a
     * response and allocates that much, ~336 MB (KAFKA-4090), every reconnect backoff, per client — enough to stall a
     * service's JVM or exhaust its heap. So the bootstrap listeners are asked first ({@link ListenerProbe}, one
     * unencrypted ApiVersions request, no credentials, up to 5 s for the answer), and with PLAINTEXT the brokers the
     * first of them that answers Kafka advertises ({@link ListenerProbe#advertised}); only a TLS answer refuses. No
     * answer, no connection or a closed connection let the client be made: it meets the broker's state itself, and
     * {@link #explain} tells it as before. The answer stands for {@link #REPROBE_AFTER}, so the clients sharing this streak ask at most once per
     * 5 s between them, and a listener fixed meanwhile is seen within 5 s.
     */
    synchronized String beforeClient() {
        String protocol = protocol();
        if (isTls(protocol)) {
            return null; // a TLS client at a plaintext listener is refused by the broker's request size limit
        }
        long now = nanoTime.getAsLong();
        if (clientCheckedAt != null && now - clientCheckedAt < REPROBE_AFTER.toNanos()) {
            return clientRefusal;
        }
        String refusal = null;
        String noClient = " No Kafka client is made until the listener answers Kafka requests (asked every "
                + REPROBE_AFTER.toSeconds() + " s): each connection attempt of one would allocate ~336 MB (KAFKA-4090)";
        List<String> servers = bootstrapServers();
        List<String> probed = servers.subList(0, Math.min(MAX_PROBED_SERVERS, servers.size()));
        String answersKafka = null;
        for (String server : probed) {
            ListenerProbe.Answer answer = probe.apply(server, BEFORE_CLIENT_TIMEOUT_MS);
            if (answer == ListenerProbe.Answer.TLS_ALERT) {
                refusal = "the broker " + server + " speaks TLS: is security.protocol right for this listener? the "
                        + "client sends unencrypted requests (security.protocol=" + protocol + ") and the listener "
                        + "answers with a TLS alert, as a TLS listener does: set security.protocol=SSL (or SASL_SSL) "
                        + "and ssl.truststore.location, or use the broker's plaintext port." + noClient;
                break;
            }
            if (answer == ListenerProbe.Answer.KAFKA_PLAINTEXT && answersKafka == null) {
                answersKafka = server;
            }
        }
        if (refusal == null && answersKafka != null && protocol.equals("PLAINTEXT")) {
            // the client connects next to the brokers the listener advertises (a SASL listener tells them only
            // after authentication: not asked)
            int asked = 0;
            for (String broker : advertised.apply(answersKafka, BEFORE_CLIENT_TIMEOUT_MS)) {
                if (probed.contains(broker)) {
                    continue;
                }
                if (asked++ == MAX_PROBED_ADVERTISED) {
                    break;
                }
                if (probe.apply(broker, BEFORE_CLIENT_TIMEOUT_MS) == ListenerProbe.Answer.TLS_ALERT) {
                    refusal = "the broker " + broker + ", which the listener " + answersKafka + " advertises, speaks "
                            + "TLS: the client bootstraps in plaintext (security.protocol=" + protocol + ") and would "
                            + "connect there next, where the answer is a TLS alert: the cluster's advertised.listeners "
                            + "names a TLS port for this plaintext listener (or a port mapping in front of the broker "
                            + "leads to one); fix the broker's advertised.listeners, or connect to a TLS listener with "
                            + "security.protocol=SSL." + noClient;
                    break;
                }
            }
        }
        clientCheckedAt = nanoTime.getAsLong();
        clientRefusal = refusal;
        return refusal;
    }

    /**
     * The clear message for a failure caused by the connection's settings, or null: a refused certificate or
     * password at once; a timeout only if the listener, asked once per streak, speaks another protocol than
     * {@code security.protocol}.
     */
    String explain(Throwable error) {
        String auth = explainAuthentication(error);
        if (auth != null) {
            return auth;
        }
        if (find(error, TimeoutException.class) == null) {
            return null;
        }
        return protocolMismatch();
    }

    /** Logs {@code message} unless it is the one already logged in this streak. */
    synchronized void report(String message, String consequence) {
        if (message.equals(reported)) {
            log.debug("{}: {} (still)", client, message);
            return;
        }
        reported = message;
        log.error("{}: {}; {} (logged once until it connects)", client, message, consequence);
    }

    /** The client got through: the streak is over. */
    synchronized void connected() {
        if (reported != null) {
            log.info("{}: connected to the broker again", client);
        }
        reported = null;
        probed = false;
        probeFinding = null;
        inconclusiveAt = null;
    }

    /**
     * The listener's protocol does not match security.protocol: the message, else null. Asked once per streak when the
     * listener answers; again after {@link #REPROBE_AFTER} when it did not answer in time or could not be reached.
     */
    synchronized String protocolMismatch() {
        if (probed) {
            return probeFinding;
        }
        long now = nanoTime.getAsLong();
        if (inconclusiveAt != null && now - inconclusiveAt < REPROBE_AFTER.toNanos()) {
            return null;
        }
        String protocol = protocol();
        boolean clientTls = isTls(protocol);
        List<String> servers = bootstrapServers();
        boolean conclusive = false;
        for (String server : servers.subList(0, Math.min(MAX_PROBED_SERVERS, servers.size()))) {
            ListenerProbe.Answer answer = probe.apply(server, PROBE_TIMEOUT_MS);
            String what = null;
            if (!clientTls && (answer == ListenerProbe.Answer.TLS_ALERT || answer == ListenerProbe.Answer.CLOSED)) {
                what = "the client sends unencrypted requests (security.protocol=" + protocol + ") and the listener "
                        + (answer == ListenerProbe.Answer.TLS_ALERT ? "answers with a TLS alert"
                                : "closes the connection at the first request")
                        + ", as a TLS listener does: set security.protocol=SSL (or SASL_SSL) and "
                        + "ssl.truststore.location, or use the broker's plaintext port";
            } else if (clientTls && answer == ListenerProbe.Answer.KAFKA_PLAINTEXT) {
                what = "the client starts TLS (security.protocol=" + protocol + ") and the listener answers "
                        + "unencrypted Kafka requests (a PLAINTEXT or SASL_PLAINTEXT listener): set security.protocol to"
                        + " the listener's protocol, or use the broker's TLS port";
            }
            if (what != null) {
                probed = true;
                probeFinding = "the broker " + server + " closed the connection during the handshake: is "
                        + "security.protocol right for this listener? " + what;
                return probeFinding;
            }
            conclusive |= answer == ListenerProbe.Answer.KAFKA_PLAINTEXT || answer == ListenerProbe.Answer.TLS_ALERT
                    || answer == ListenerProbe.Answer.CLOSED;
        }
        // a listener that answered in its protocol settles the question for the streak; no answer in time (a
        // loaded broker) or no connection (one still starting) is asked again later
        probed = conclusive;
        inconclusiveAt = conclusive ? null : now;
        return null;
    }

    // ---- the messages ---------------------------------------------------------------------------------------

    /** A refused certificate or password, in words; null for anything else. */
    String explainAuthentication(Throwable error) {
        AuthenticationException auth = find(error, AuthenticationException.class);
        if (auth == null) {
            return null;
        }
        String broker = String.join(",", bootstrapServers());
        if (auth instanceof SslAuthenticationException) {
            Throwable root = root(auth);
            String chain = chainText(auth).toLowerCase(Locale.ROOT);
            if (find(auth, CertPathBuilderException.class) != null || find(auth, CertPathValidatorException.class)
                    != null || chain.contains("pkix path") || chain.contains("certification path")) {
                return "TLS handshake with broker " + broker + " failed: the broker's certificate is not trusted by "
                        + truststore() + "; set the truststore that holds the broker's CA (" + root.getMessage() + ")";
            }
            if (chain.contains("subject alternative") || chain.contains("no name matching")) {
                return "TLS handshake with broker " + broker + " failed: the broker's certificate does not name the "
                        + "address the client connected to (" + root.getMessage() + "); connect with a name the "
                        + "certificate holds (bootstrap.servers and the broker's advertised.listeners), or reissue "
                        + "the certificate";
            }
            if (chain.contains("unrecognized ssl message") || chain.contains("remote host terminated")
                    || chain.contains("plaintext connection")) {
                return "the broker " + broker + " closed the connection during the handshake: is security.protocol "
                        + "right for this listener? (TLS handshake failed: " + root.getMessage() + ")";
            }
            return "TLS handshake with broker " + broker + " failed: " + root.getMessage() + "; check the ssl.* "
                    + "settings (ssl.truststore.location, ssl.keystore.location when the broker wants client "
                    + "certificates)";
        }
        if (auth instanceof SaslAuthenticationException) {
            String user = saslUser();
            return "SASL authentication failed for user " + (user == null ? "(no username in sasl.jaas.config)"
                    : "'" + user + "'") + " (" + mechanism() + ") at broker " + broker + ": wrong password or unknown "
                    + "user (check sasl.jaas.config); the broker said: " + auth.getMessage();
        }
        return "authentication with broker " + broker + " failed: " + auth.getMessage() + "; check "
                + "security.protocol, sasl.mechanism and sasl.jaas.config";
    }

    /** Whether a failure is about the connection (the ones {@link #explain} may explain). */
    static boolean isConnection(Throwable error) {
        return find(error, AuthenticationException.class) != null || find(error, TimeoutException.class) != null;
    }

    private String truststore() {
        Object location = settings.get("ssl.truststore.location");
        if (location != null) {
            return "ssl.truststore.location=" + location;
        }
        if (settings.get("ssl.truststore.certificates") != null) {
            return "the certificates in ssl.truststore.certificates";
        }
        return "the JVM's default truststore (ssl.truststore.location is not set)";
    }

    private String protocol() {
        Object p = settings.get("security.protocol");
        return p == null ? "PLAINTEXT" : String.valueOf(p).trim().toUpperCase(Locale.ROOT);
    }

    /** SSL and SASL_SSL: the client starts TLS. */
    private static boolean isTls(String protocol) {
        return protocol.endsWith("SSL");
    }

    private String mechanism() {
        Object m = settings.get("sasl.mechanism");
        return m == null ? "GSSAPI" : String.valueOf(m).trim();
    }

    /** The user name in sasl.jaas.config (a Kafka Password or a String); never anything else of it. */
    private String saslUser() {
        Object jaas = settings.get("sasl.jaas.config");
        if (jaas == null) {
            return null;
        }
        String text = jaas instanceof org.apache.kafka.common.config.types.Password p ? p.value() : jaas.toString();
        Matcher m = JAAS_USER.matcher(text);
        return m.find() ? m.group(1) : null;
    }

    private List<String> bootstrapServers() {
        Object servers = settings.get("bootstrap.servers");
        List<String> list = new ArrayList<>();
        if (servers instanceof List<?> l) {
            l.forEach(s -> list.add(String.valueOf(s).trim()));
        } else if (servers != null) {
            for (String s : String.valueOf(servers).split(",")) {
                if (!s.isBlank()) {
                    list.add(s.trim());
                }
            }
        }
        return list;
    }

    private static <T extends Throwable> T find(Throwable error, Class<T> type) {
        for (Throwable e = error; e != null; e = e.getCause() == e ? null : e.getCause()) {
            if (type.isInstance(e)) {
                return type.cast(e);
            }
        }
        return null;
    }

    private static Throwable root(Throwable error) {
        Throwable e = error;
        while (e.getCause() != null && e.getCause() != e) {
            e = e.getCause();
        }
        return e;
    }

    private static String chainText(Throwable error) {
        StringBuilder sb = new StringBuilder();
        for (Throwable e = error; e != null; e = e.getCause() == e ? null : e.getCause()) {
            sb.append(e.getClass().getName()).append(": ").append(e.getMessage()).append('\n');
        }
        return sb.toString();
    }
}
