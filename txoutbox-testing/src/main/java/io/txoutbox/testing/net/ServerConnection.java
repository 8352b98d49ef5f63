package io.txoutbox.testing.net;

import static io.txoutbox.testing.net.PgWire.closeQuietly;
import static io.txoutbox.testing.net.PgWire.errorText;
import static io.txoutbox.testing.net.PgWire.message;
import static io.txoutbox.testing.net.PgWire.readBody;
import static io.txoutbox.testing.net.PgWire.readInt;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.Socket;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** One PostgreSQL backend of a {@link ServerPool}, and the thread that passes its messages to the client it serves. */
final class ServerConnection {

    private static final Logger log = LoggerFactory.getLogger(TransactionPoolingProxy.class);

    final Socket socket;
    final DataInputStream in;
    final OutputStream out;
    final byte[] greeting;
    final int backendPid;
    final ServerPool pool;
    /** The client whose transaction this backend runs now, or null: idle. Guarded by the pool. */
    volatile ClientConnection client;
    /** A DISCARD ALL runs (after a session-mode client left): not handed out until its ReadyForQuery. */
    volatile boolean resetting;

    ServerConnection(byte[] startup, int index, ServerPool pool) throws IOException {
        this.pool = pool;
        socket = new Socket(pool.targetHost, pool.targetPort);
        pool.sockets.add(socket);
        socket.setTcpNoDelay(true);
        in = new DataInputStream(new BufferedInputStream(socket.getInputStream()));
        out = new BufferedOutputStream(socket.getOutputStream());
        out.write(startup);
        out.flush();
        ByteArrayOutputStream g = new ByteArrayOutputStream();
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
        log.debug("txoutbox-testing: pooling proxy {}: server connection {} is backend {}", pool.proxyPort, index,
                pid);
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
                ClientConnection c = client;
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
            ClientConnection c = client;
            if (c != null) {
                c.serverLost();
            }
        }
    }
}
