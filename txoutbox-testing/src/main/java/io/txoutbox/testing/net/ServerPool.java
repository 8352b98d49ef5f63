package io.txoutbox.testing.net;

import java.io.IOException;
import java.net.Socket;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The server connections of a {@link TransactionPoolingProxy} opened with one StartupMessage, and which client each
 * one serves now: handed out round-robin, given back at the end of a transaction (or session).
 */
final class ServerPool {
    final List<ServerConnection> servers = new ArrayList<>();
    /** The first server connection's ParameterStatus and BackendKeyData messages, for every client. */
    final byte[] greeting;
    final String targetHost;
    final int targetPort;
    /** The proxy's port, for log lines. */
    final int proxyPort;
    /** Every socket the proxy opened, closed by {@link TransactionPoolingProxy#close()}. */
    final List<Socket> sockets;
    private final AtomicBoolean closed;
    private final AtomicLong transactions;
    private int next;

    ServerPool(byte[] startup, String targetHost, int targetPort, int poolSize, int proxyPort, List<Socket> sockets,
               AtomicBoolean closed, AtomicLong transactions) throws IOException {
        this.targetHost = targetHost;
        this.targetPort = targetPort;
        this.proxyPort = proxyPort;
        this.sockets = sockets;
        this.closed = closed;
        this.transactions = transactions;
        byte[] first = null;
        for (int i = 0; i < poolSize; i++) {
            ServerConnection s = new ServerConnection(startup, i, this);
            servers.add(s);
            if (first == null) {
                first = s.greeting;
            }
        }
        greeting = first;
        for (ServerConnection s : servers) {
            s.start();
        }
    }

    /**
     * The next idle server connection after the last one handed out, other than {@code previous} (the client's
     * last) while another is idle; waits while none is idle.
     */
    synchronized ServerConnection take(ClientConnection client, ServerConnection previous) throws IOException {
        while (true) {
            if (servers.isEmpty()) {
                throw new IOException("transactionPoolingProxy: every server connection of the pool is gone");
            }
            ServerConnection fallback = null;
            for (int i = 0; i < servers.size(); i++) {
                int at = (next + i) % servers.size();
                ServerConnection s = servers.get(at);
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

    private ServerConnection handOut(ServerConnection s, ClientConnection client) {
        s.client = client;
        transactions.incrementAndGet();
        return s;
    }

    synchronized void giveBack(ServerConnection s) {
        s.client = null;
        notifyAll();
    }

    synchronized void resetDone(ServerConnection s) {
        s.resetting = false;
        notifyAll();
    }

    synchronized void startReset(ServerConnection s) {
        s.client = null;
        s.resetting = true;
    }

    synchronized void remove(ServerConnection s) {
        servers.remove(s);
        notifyAll();
    }
}
