package io.txoutbox.testing.net;

import static io.txoutbox.testing.net.PgWire.closeQuietly;
import static io.txoutbox.testing.net.PgWire.message;
import static io.txoutbox.testing.net.PgWire.readBody;

import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.function.BooleanSupplier;

/**
 * One client connection of a {@link TransactionPoolingProxy}: passes its messages to the server connection it has
 * from the {@link ServerPool}, and gives that back at the end of a transaction (in session mode: when asked to move).
 */
final class ClientConnection {
    final Socket socket;
    final DataInputStream in;
    final OutputStream out;
    final ServerPool pool;
    /** The proxy's mode now: true = {@code pool_mode=session}. */
    private final BooleanSupplier sessionMode;
    private ServerConnection server;
    /** The server connection of the client's last transaction. */
    private ServerConnection previous;
    /** Session mode: move to another server connection at the next idle point (see moveSessions). */
    private volatile boolean move;
    private int pendingSyncs;
    /** A message went to the server after the last Sync/Query: the transaction goes on. */
    private boolean sentSinceSync;

    ClientConnection(Socket socket, DataInputStream in, OutputStream out, ServerPool pool,
                     BooleanSupplier sessionMode) {
        this.socket = socket;
        this.in = in;
        this.out = out;
        this.pool = pool;
        this.sessionMode = sessionMode;
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
            ServerConnection s;
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
    synchronized void readyForQuery(ServerConnection s, byte status) {
        if (server != s) {
            return;
        }
        pendingSyncs = Math.max(0, pendingSyncs - 1);
        if (status == 'I' && pendingSyncs == 0 && !sentSinceSync && (!sessionMode.getAsBoolean() || move)) {
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
        ServerConnection s;
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

    private void resetAndGiveBack(ServerConnection s) {
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
