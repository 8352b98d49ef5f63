package io.txoutbox.testing.net;

import static io.txoutbox.testing.net.PgWire.CANCEL_REQUEST;
import static io.txoutbox.testing.net.PgWire.GSS_REQUEST;
import static io.txoutbox.testing.net.PgWire.PROTOCOL_3;
import static io.txoutbox.testing.net.PgWire.SSL_REQUEST;
import static io.txoutbox.testing.net.PgWire.closeQuietly;
import static io.txoutbox.testing.net.PgWire.message;
import static io.txoutbox.testing.net.PgWire.readInt;
import static io.txoutbox.testing.net.PgWire.withLength;
import static io.txoutbox.testing.net.PgWire.writeError;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A connection pooler in front of PostgreSQL that works like PgBouncer with {@code pool_mode=transaction}: each
 * client transaction — the client's messages up to the {@code ReadyForQuery} with status idle that ends it — runs on
 * the next idle server connection of a shared pool, round-robin (another than its last while one is idle), so
 * consecutive transactions (and autocommit
 * statements) of one client connection run on different PostgreSQL backends, and session state (advisory locks,
 * {@code SET}) stays behind on a backend the client no longer talks to. {@link #sessionMode(boolean)} switches to
 * {@code pool_mode=session}: a client keeps the server connection it has (or gets next) until it disconnects.
 *
 * <p>It speaks the PostgreSQL v3 protocol only as far as that needs: it refuses SSL and GSS encryption (the client
 * goes on in plain text), replays the client's StartupMessage to open the pool's server connections for that
 * user, database and options, and answers the client with the first server connection's ParameterStatus and
 * BackendKeyData (a CancelRequest is dropped). Server authentication must be {@code trust} (the embedded test
 * server's); any other is refused with an error to the client. Use pgjdbc with {@code prepareThreshold=0}, as
 * behind PgBouncer: a server-side prepared statement lives on one backend. LISTEN/NOTIFY and COPY are not
 * supported (neither is LISTEN through PgBouncer in transaction mode).
 */
public final class TransactionPoolingProxy implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(TransactionPoolingProxy.class);

    private final String targetHost;
    private final int targetPort;
    private final int poolSize;
    private final ServerSocket listener;
    private final Thread acceptor;
    private final AtomicBoolean closed = new AtomicBoolean();
    private final Map<String, ServerPool> pools = new HashMap<>();
    private final List<Socket> sockets = new CopyOnWriteArrayList<>();
    private final List<ClientConnection> clients = new CopyOnWriteArrayList<>();
    private final AtomicLong transactions = new AtomicLong();
    private volatile boolean sessionMode;

    private TransactionPoolingProxy(String targetHost, int targetPort, int poolSize) {
        this.targetHost = targetHost;
        this.targetPort = targetPort;
        this.poolSize = poolSize;
        try {
            this.listener = new ServerSocket();
            listener.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
        } catch (IOException e) {
            throw new UncheckedIOException("transactionPoolingProxy: could not listen on a free local port", e);
        }
        this.acceptor = new Thread(this::accept, "txoutbox-pooling-proxy-" + listener.getLocalPort());
        acceptor.setDaemon(true);
    }

    /**
     * A transaction-mode pooler on a free port of 127.0.0.1 in front of {@code targetHost:targetPort}, with
     * {@code poolSize} server connections per user, database and startup options (at least 2, so that consecutive
     * transactions of one client change backend).
     */
    public static TransactionPoolingProxy start(String targetHost, int targetPort, int poolSize) {
        if (poolSize < 1) {
            throw new IllegalArgumentException("transactionPoolingProxy.poolSize must be >= 1, was " + poolSize);
        }
        TransactionPoolingProxy p = new TransactionPoolingProxy(targetHost, targetPort, poolSize);
        p.acceptor.start();
        log.info("txoutbox-testing: transaction-pooling proxy on 127.0.0.1:{} -> {}:{}, {} server connections per "
                + "pool", p.port(), targetHost, targetPort, poolSize);
        return p;
    }

    public int port() {
        return listener.getLocalPort();
    }

    /**
     * {@code jdbcUrl} (of the target) rewritten to go through this proxy, with {@code prepareThreshold=0}: e.g.
     * {@code jdbc:postgresql://localhost:5432/postgres?user=x} becomes
     * {@code jdbc:postgresql://127.0.0.1:<port>/postgres?user=x&prepareThreshold=0}.
     */
    public String jdbcUrl(String jdbcUrl) {
        String rest = jdbcUrl.substring("jdbc:postgresql://".length());
        int slash = rest.indexOf('/');
        String path = slash < 0 ? "/" : rest.substring(slash);
        return "jdbc:postgresql://127.0.0.1:" + port() + path + (path.contains("?") ? "&" : "?")
                + "prepareThreshold=0";
    }

    /**
     * true: {@code pool_mode=session} from now on — a client keeps its server connection; false (the start):
     * transaction pooling. A client in a transaction (or with a statement in flight) keeps its server connection
     * until that ends either way.
     */
    public void sessionMode(boolean on) {
        sessionMode = on;
        log.info("txoutbox-testing: pooling proxy {} now in {} mode", port(), on ? "session" : "transaction");
    }

    /**
     * Session mode: every connected client moves, at its next idle point (between transactions), to another server
     * connection and stays there — as if the pooler had replaced its server connection. Its session state (advisory
     * locks, SET) stays behind on the old backend.
     */
    public void moveSessions() {
        for (ClientConnection c : clients) {
            c.moveNow();
        }
    }

    /** How many times a client was given a server connection (a transaction, or a session in session mode). */
    public long assignments() {
        return transactions.get();
    }

    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        try {
            listener.close();
        } catch (IOException ignored) {
            // closing
        }
        for (Socket s : sockets) {
            closeQuietly(s);
        }
    }

    // ---- accepting clients -----------------------------------------------------------------------------------

    private void accept() {
        while (!closed.get()) {
            Socket client;
            try {
                client = listener.accept();
            } catch (IOException e) {
                if (!closed.get()) {
                    log.warn("txoutbox-testing: pooling proxy {} stopped accepting: {}", port(), e.toString());
                }
                return;
            }
            sockets.add(client);
            Thread t = new Thread(() -> serve(client), "txoutbox-pooling-proxy-client-" + client.getPort());
            t.setDaemon(true);
            t.start();
        }
    }

    private void serve(Socket socket) {
        ClientConnection client = null;
        try {
            socket.setTcpNoDelay(true);
            DataInputStream in = new DataInputStream(new BufferedInputStream(socket.getInputStream()));
            OutputStream out = new BufferedOutputStream(socket.getOutputStream());
            byte[] startup;
            while (true) {
                int length = in.readInt();
                byte[] body = new byte[length - 4];
                in.readFully(body);
                int code = readInt(body, 0);
                if (code == SSL_REQUEST || code == GSS_REQUEST) {
                    out.write('N');
                    out.flush();
                    continue;
                }
                if (code == CANCEL_REQUEST) {
                    closeQuietly(socket); // not supported: the query runs to its end
                    return;
                }
                if (code != PROTOCOL_3) {
                    closeQuietly(socket);
                    return;
                }
                startup = withLength(body);
                break;
            }
            ServerPool pool;
            try {
                pool = pool(startup);
            } catch (IOException | RuntimeException e) {
                writeError(out, "transactionPoolingProxy: could not open the server connections: " + e.getMessage());
                closeQuietly(socket);
                return;
            }
            client = new ClientConnection(socket, in, out, pool, () -> sessionMode);
            clients.add(client);
            synchronized (out) {
                out.write(message('R', new byte[] {0, 0, 0, 0})); // AuthenticationOk
                out.write(pool.greeting);
                out.write(message('Z', new byte[] {'I'}));
                out.flush();
            }
            client.forward();
        } catch (IOException e) {
            log.debug("txoutbox-testing: pooling proxy client ended: {}", e.toString());
        } finally {
            if (client != null) {
                clients.remove(client);
                client.disconnect();
            }
            closeQuietly(socket);
            sockets.remove(socket);
        }
    }

    private synchronized ServerPool pool(byte[] startup) throws IOException {
        String key = Arrays.toString(startup);
        ServerPool pool = pools.get(key);
        if (pool == null) {
            pool = new ServerPool(startup, targetHost, targetPort, poolSize, port(), sockets, closed,
                    transactions);
            pools.put(key, pool);
        }
        return pool;
    }
}
