package io.txoutbox.testing.net;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.netcrusher.core.reactor.NioReactor;
import org.netcrusher.core.throttle.DelayThrottler;
import org.netcrusher.tcp.TcpCrusher;
import org.netcrusher.tcp.TcpCrusherBuilder;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A TCP proxy on a free local port in front of a real service (PostgreSQL, Kafka), so a test can freeze or cut the
 * network between a client and that service without Docker or root. A thin wrapper over netcrusher-core; each proxy
 * owns its own reactor (netcrusher names that thread itself).
 *
 * <p>Kafka clients connect to the advertised listener after bootstrap, so to put a proxy in front of a broker the
 * broker must advertise the proxy's port (start the proxy first, then the broker with
 * {@code advertised.listeners=PLAINTEXT://127.0.0.1:<proxy port>}); otherwise only the bootstrap goes through it.
 *
 * <pre>{@code
 * try (TcpProxy proxy = TcpProxy.start("127.0.0.1", 5432)) {
 *     connect to proxy.port(); proxy.freeze(); ... proxy.unfreeze(); proxy.cut();
 * }
 * }</pre>
 */
public final class TcpProxy implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(TcpProxy.class);
    private static final int BIND_ATTEMPTS = 5;

    private final NioReactor reactor;
    private final TcpCrusher crusher;
    private final String targetHost;
    private final int targetPort;
    private final int port;
    private final AtomicBoolean closed = new AtomicBoolean();

    private TcpProxy(NioReactor reactor, TcpCrusher crusher, String targetHost, int targetPort, int port) {
        this.reactor = reactor;
        this.crusher = crusher;
        this.targetHost = targetHost;
        this.targetPort = targetPort;
        this.port = port;
    }

    /** A proxy from a free port on 127.0.0.1 to {@code targetHost:targetPort}, open and passing traffic. */
    public static TcpProxy start(String targetHost, int targetPort) {
        return builder().target(targetHost, targetPort).start();
    }

    public static Builder builder() {
        return new Builder();
    }

    /** Always 127.0.0.1. */
    public String host() {
        return "127.0.0.1";
    }

    /** The local port clients connect to instead of the target's. */
    public int port() {
        return port;
    }

    /** {@code 127.0.0.1:<port>}, e.g. for {@code bootstrap.servers}. */
    public String address() {
        return host() + ":" + port;
    }

    public String targetHost() {
        return targetHost;
    }

    public int targetPort() {
        return targetPort;
    }

    /** Stops moving bytes in both directions and stops accepting; connections stay open and stall. */
    public void freeze() {
        log.info("TcpProxy {} -> {}:{}: freeze", port, targetHost, targetPort);
        crusher.freeze();
    }

    /** Resumes a frozen proxy; buffered bytes flow again. */
    public void unfreeze() {
        log.info("TcpProxy {} -> {}:{}: unfreeze", port, targetHost, targetPort);
        crusher.unfreeze();
    }

    public boolean isFrozen() {
        return crusher.isFrozen();
    }

    /** Closes every proxied connection (clients see EOF or a reset); new connections are still accepted. */
    public void cut() {
        log.info("TcpProxy {} -> {}:{}: cut {} connection(s)", port, targetHost, targetPort,
                crusher.getClientAddresses().size());
        crusher.closeAllPairs();
    }

    /** Number of client connections currently proxied. */
    public int connectionCount() {
        return crusher.getClientAddresses().size();
    }

    /** Closes the listening socket, all connections and the reactor. Idempotent. */
    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        try {
            crusher.close();
        } finally {
            reactor.close();
        }
    }

    /** Options of a {@link TcpProxy}. */
    public static final class Builder {
        private String targetHost;
        private int targetPort;
        private Duration delay = Duration.ZERO;
        private Duration delayJitter = Duration.ZERO;

        private Builder() {
        }

        public Builder target(String host, int port) {
            this.targetHost = Objects.requireNonNull(host, "target host");
            if (port < 1 || port > 65535) {
                throw new IllegalArgumentException("tcpProxy.targetPort must be in 1..65535, was " + port);
            }
            this.targetPort = port;
            return this;
        }

        /** Adds a fixed latency (plus up to {@code jitter}) to every chunk in both directions. */
        public Builder delay(Duration delay, Duration jitter) {
            if (delay.isNegative() || jitter.isNegative()) {
                throw new IllegalArgumentException("tcpProxy.delay and jitter must be >= 0, were " + delay + ", " + jitter);
            }
            this.delay = delay;
            this.delayJitter = jitter;
            return this;
        }

        public TcpProxy start() {
            if (targetHost == null) {
                throw new IllegalStateException("tcpProxy.target must be set");
            }
            RuntimeException last = null;
            for (int attempt = 1; attempt <= BIND_ATTEMPTS; attempt++) {
                int port = FreePorts.take();
                NioReactor reactor;
                try {
                    reactor = new NioReactor();
                } catch (IOException e) {
                    throw new UncheckedIOException("could not open a netcrusher reactor", e);
                }
                try {
                    TcpCrusherBuilder builder = TcpCrusherBuilder.builder()
                            .withReactor(reactor)
                            .withBindAddress("127.0.0.1", port)
                            .withConnectAddress(targetHost, targetPort);
                    if (!delay.isZero() || !delayJitter.isZero()) {
                        long delayNs = delay.toNanos();
                        long jitterNs = delayJitter.toNanos();
                        builder.withIncomingThrottlerFactory(a -> new DelayThrottler(delayNs, jitterNs, TimeUnit.NANOSECONDS))
                                .withOutgoingThrottlerFactory(a -> new DelayThrottler(delayNs, jitterNs, TimeUnit.NANOSECONDS));
                    }
                    TcpCrusher crusher = builder.buildAndOpen();
                    log.info("TcpProxy 127.0.0.1:{} -> {}:{} open", port, targetHost, targetPort);
                    return new TcpProxy(reactor, crusher, targetHost, targetPort, port);
                } catch (RuntimeException e) {
                    reactor.close();
                    if (!FreePorts.isBindFailure(e)) {
                        throw e;
                    }
                    log.info("TcpProxy: port {} taken meanwhile, retrying ({}/{})", port, attempt, BIND_ATTEMPTS);
                    last = e;
                }
            }
            throw new IllegalStateException("TcpProxy could not bind a free port after " + BIND_ATTEMPTS + " attempts", last);
        }
    }
}
