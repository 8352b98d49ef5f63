package io.txoutbox.testing.net;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
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
    private static final int SSL_REQUEST = 80877103;
    private static final int GSS_REQUEST = 80877104;
    private static final int CANCEL_REQUEST = 80877102;
    private static final int PROTOCOL_3 = 196608;

    private final String targetHost;
    private final int targetPort;
    private final int poolSize;
    private final ServerSocket listener;
    private final Thread acceptor;
    private final AtomicBoolean closed = new AtomicBoolean();
    private final Map<String, Pool> pools = new HashMap<>();
    private final List<Socket> sockets = new CopyOnWriteArrayList<>();
    private final List<Client> clients = new CopyOnWriteArrayList<>();
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
        for (Client c : clients) {
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
        Client client = null;
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
            Pool pool;
            try {
                pool = pool(startup);
            } catch (IOException | RuntimeException e) {
                writeError(out, "transactionPoolingProxy: could not open the server connections: " + e.getMessage());
                closeQuietly(socket);
                return;
            }
            client = new Client(socket, in, out, pool);
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

    private synchronized Pool pool(byte[] startup) throws IOException {
        String key = Arrays.toString(startup);
        Pool pool = pools.get(key);
        if (pool == null) {
            pool = new Pool(startup);
            pools.put(key, pool);
        }
        return pool;
    }

    // ---- the pool of server connections ----------------------------------------------------------------------

    /** The server connections opened with one StartupMessage. */
    private final class Pool {
        final List<Server> servers = new ArrayList<>();
        /** The first server connection's ParameterStatus and BackendKeyData messages, for every client. */
        final byte[] greeting;
        private int next;

        Pool(byte[] startup) throws IOException {
            byte[] first = null;
            for (int i = 0; i < poolSize; i++) {
                Server s = new Server(startup, i, this);
                servers.add(s);
                if (first == null) {
                    first = s.greeting;
                }
            }
            greeting = first;
            for (Server s : servers) {
                s.start();
            }
        }

        /**
         * The next idle server connection after the last one handed out, other than {@code previous} (the client's
         * last) while another is idle; waits while none is idle.
         */
        synchronized Server take(Client client, Server previous) throws IOException {
            while (true) {
                if (servers.isEmpty()) {
                    throw new IOException("transactionPoolingProxy: every server connection of the pool is gone");
                }
                Server fallback = null;
                for (int i = 0; i < servers.size(); i++) {
                    int at = (next + i) % servers.size();
                    Server s = servers.get(at);
                    if (s.client != null || s.resetting) {
                        continue;
                    }
                    if (s == previous && servers.size() > 1) {
                        fallback = s;
                        continue;
                    }
                    next = (at + 1) % servers.size();
                    return handOut(s, client);
                }
                if (fallback != null) {
                    return handOut(fallback, client);
                }
                try {
                    wait(1000);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new IOException("interrupted while waiting for a server connection", e);
                }
                if (closed.get()) {
                    throw new IOException("transactionPoolingProxy closed");
                }
            }
        }

        private Server handOut(Server s, Client client) {
            s.client = client;
            transactions.incrementAndGet();
            return s;
        }

        synchronized void giveBack(Server s) {
            s.client = null;
            notifyAll();
        }

        synchronized void resetDone(Server s) {
            s.resetting = false;
            notifyAll();
        }

        synchronized void startReset(Server s) {
            s.client = null;
            s.resetting = true;
        }

        synchronized void remove(Server s) {
            servers.remove(s);
            notifyAll();
        }
    }

    /** One PostgreSQL backend of a pool, and the thread that passes its messages to the client it serves. */
    private final class Server {
        final Socket socket;
        final DataInputStream in;
        final OutputStream out;
        final byte[] greeting;
        final int backendPid;
        final Pool pool;
        /** The client whose transaction this backend runs now, or null: idle. Guarded by the pool. */
        volatile Client client;
        /** A DISCARD ALL runs (after a session-mode client left): not handed out until its ReadyForQuery. */
        volatile boolean resetting;

        Server(byte[] startup, int index, Pool pool) throws IOException {
            this.pool = pool;
            socket = new Socket(targetHost, targetPort);
            sockets.add(socket);
            socket.setTcpNoDelay(true);
            in = new DataInputStream(new BufferedInputStream(socket.getInputStream()));
            out = new BufferedOutputStream(socket.getOutputStream());
            out.write(startup);
            out.flush();
            java.io.ByteArrayOutputStream g = new java.io.ByteArrayOutputStream();
            int pid = 0;
            while (true) {
                int type = in.readUnsignedByte();
                byte[] body = readBody(in);
                if (type == 'R') {
                    int auth = readInt(body, 0);
                    if (auth != 0) {
                        closeQuietly(socket);
                        throw new IOException("the server asks for authentication method " + auth
                                + "; only trust is supported");
                    }
                } else if (type == 'S') {
                    g.write(message(type, body));
                } else if (type == 'K') {
                    pid = readInt(body, 0);
                    g.write(message(type, body));
                } else if (type == 'E') {
                    closeQuietly(socket);
                    throw new IOException("server refused the connection: " + errorText(body));
                } else if (type == 'Z') {
                    break;
                }
            }
            greeting = g.toByteArray();
            backendPid = pid;
            log.debug("txoutbox-testing: pooling proxy {}: server connection {} is backend {}", port(), index, pid);
        }

        void start() {
            Thread t = new Thread(this::pump, "txoutbox-pooling-proxy-server-" + backendPid);
            t.setDaemon(true);
            t.start();
        }

        /** Passes the backend's messages to its client; gives the backend back when a transaction ends. */
        private void pump() {
            try {
                while (true) {
                    int type = in.readUnsignedByte();
                    byte[] body = readBody(in);
                    if (resetting) {
                        if (type == 'Z') {
                            pool.resetDone(this);
                        }
                        continue;
                    }
                    Client c = client;
                    if (c == null) {
                        continue; // nobody's (a notice, or a notification): dropped, as by PgBouncer
                    }
                    if (type == 'Z') {
                        c.readyForQuery(this, body[0]);
                    }
                    c.send(message(type, body));
                }
            } catch (IOException e) {
                log.debug("txoutbox-testing: pooling proxy server connection {} ended: {}", backendPid,
                        e.toString());
            } finally {
                closeQuietly(socket);
                pool.remove(this); // ended (terminated, idle timeout): not handed out again
                Client c = client;
                if (c != null) {
                    c.serverLost();
                }
            }
        }
    }

    // ---- one client connection -------------------------------------------------------------------------------

    private final class Client {
        final Socket socket;
        final DataInputStream in;
        final OutputStream out;
        final Pool pool;
        private Server server;
        /** The server connection of the client's last transaction. */
        private Server previous;
        /** Session mode: move to another server connection at the next idle point (see moveSessions). */
        private volatile boolean move;
        private int pendingSyncs;
        /** A message went to the server after the last Sync/Query: the transaction goes on. */
        private boolean sentSinceSync;

        Client(Socket socket, DataInputStream in, OutputStream out, Pool pool) {
            this.socket = socket;
            this.in = in;
            this.out = out;
            this.pool = pool;
        }

        void forward() throws IOException {
            while (true) {
                int type;
                try {
                    type = in.readUnsignedByte();
                } catch (EOFException e) {
                    return;
                }
                byte[] body = readBody(in);
                if (type == 'X') {
                    return; // Terminate: the server connection stays in the pool
                }
                Server s;
                synchronized (this) {
                    if (server == null) {
                        server = pool.take(this, previous);
                    }
                    s = server;
                    if (type == 'S' || type == 'Q') {
                        pendingSyncs++;
                        sentSinceSync = false;
                    } else {
                        sentSinceSync = true;
                    }
                }
                synchronized (s.out) {
                    s.out.write(message(type, body));
                    if (type == 'S' || type == 'Q' || type == 'H') {
                        s.out.flush();
                    }
                }
            }
        }

        /** Before the ReadyForQuery goes to the client: at the end of a transaction the server goes back. */
        synchronized void readyForQuery(Server s, byte status) {
            if (server != s) {
                return;
            }
            pendingSyncs = Math.max(0, pendingSyncs - 1);
            if (status == 'I' && pendingSyncs == 0 && !sentSinceSync && (!sessionMode || move)) {
                move = false;
                previous = s;
                server = null;
                pool.giveBack(s);
            }
        }

        /** Gives the server connection back now when idle, else at the end of what runs on it. */
        synchronized void moveNow() {
            if (server != null && pendingSyncs == 0 && !sentSinceSync) {
                previous = server;
                pool.giveBack(server);
                server = null;
            } else {
                move = true;
            }
        }

        void send(byte[] message) throws IOException {
            synchronized (out) {
                try {
                    out.write(message);
                    out.flush();
                } catch (IOException e) {
                    closeQuietly(socket); // the client is gone; the server goes back when it is idle
                }
            }
        }

        void serverLost() {
            closeQuietly(socket);
        }

        void disconnect() {
            Server s;
            boolean idle;
            synchronized (this) {
                s = server;
                server = null;
                idle = pendingSyncs == 0 && !sentSinceSync;
            }
            if (s == null) {
                return;
            }
            if (idle) {
                // idle (a session-mode client, or one that left between statements): reset it like PgBouncer's
                // server_reset_query and give it back
                resetAndGiveBack(s);
            } else {
                pool.remove(s); // in the middle of something: the server connection is closed, not reused
                closeQuietly(s.socket);
            }
        }

        private void resetAndGiveBack(Server s) {
            pool.startReset(s);
            try {
                synchronized (s.out) {
                    byte[] sql = "DISCARD ALL\0".getBytes(StandardCharsets.UTF_8);
                    s.out.write(message('Q', sql));
                    s.out.flush();
                }
            } catch (IOException e) {
                pool.remove(s);
                closeQuietly(s.socket);
                return;
            }
            // its answer is dropped; the server is handed out again after its ReadyForQuery
        }
    }

    // ---- the wire format -------------------------------------------------------------------------------------

    private static byte[] readBody(DataInputStream in) throws IOException {
        int length = in.readInt();
        if (length < 4 || length > 1 << 30) {
            throw new IOException("bad message length " + length);
        }
        byte[] body = new byte[length - 4];
        in.readFully(body);
        return body;
    }

    private static byte[] message(int type, byte[] body) {
        byte[] m = new byte[5 + body.length];
        m[0] = (byte) type;
        writeInt(m, 1, body.length + 4);
        System.arraycopy(body, 0, m, 5, body.length);
        return m;
    }

    private static byte[] withLength(byte[] body) {
        byte[] m = new byte[4 + body.length];
        writeInt(m, 0, body.length + 4);
        System.arraycopy(body, 0, m, 4, body.length);
        return m;
    }

    private static void writeError(OutputStream out, String text) throws IOException {
        java.io.ByteArrayOutputStream b = new java.io.ByteArrayOutputStream();
        for (String[] field : new String[][] {{"S", "FATAL"}, {"V", "FATAL"}, {"C", "08006"}, {"M", text}}) {
            b.write(field[0].charAt(0));
            b.write(field[1].getBytes(StandardCharsets.UTF_8));
            b.write(0);
        }
        b.write(0);
        out.write(message('E', b.toByteArray()));
        out.flush();
    }

    private static String errorText(byte[] body) {
        int i = 0;
        while (i < body.length && body[i] != 0) {
            int type = body[i++];
            int end = i;
            while (end < body.length && body[end] != 0) {
                end++;
            }
            if (type == 'M') {
                return new String(body, i, end - i, StandardCharsets.UTF_8);
            }
            i = end + 1;
        }
        return "(no message)";
    }

    private static int readInt(byte[] b, int at) {
        return ((b[at] & 0xff) << 24) | ((b[at + 1] & 0xff) << 16) | ((b[at + 2] & 0xff) << 8) | (b[at + 3] & 0xff);
    }

    private static void writeInt(byte[] b, int at, int v) {
        b[at] = (byte) (v >>> 24);
        b[at + 1] = (byte) (v >>> 16);
        b[at + 2] = (byte) (v >>> 8);
        b[at + 3] = (byte) v;
    }

    private static void closeQuietly(Socket s) {
        try {
            s.close();
        } catch (IOException ignored) {
            // closing
        }
    }
}
