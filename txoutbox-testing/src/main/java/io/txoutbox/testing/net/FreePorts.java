package io.txoutbox.testing.net;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.util.ArrayList;
import java.util.List;

/**
 * Ports handed out by the operating system, because other test runs share this machine and no fixed port can be
 * assumed free. The ports are closed before they are returned, so another process may take one in between: callers
 * must retry on a bind failure.
 */
public final class FreePorts {

    private FreePorts() {
    }

    /** One free port on 127.0.0.1. */
    public static int take() {
        return take(1)[0];
    }

    /** {@code count} distinct free ports on 127.0.0.1 (all held open together, so they differ). */
    public static int[] take(int count) {
        if (count < 1) {
            throw new IllegalArgumentException("count must be >= 1, was " + count);
        }
        List<ServerSocket> sockets = new ArrayList<>(count);
        try {
            InetAddress loopback = InetAddress.getByName("127.0.0.1");
            for (int i = 0; i < count; i++) {
                ServerSocket socket = new ServerSocket(0, 1, loopback);
                socket.setReuseAddress(true);
                sockets.add(socket);
            }
            int[] ports = new int[count];
            for (int i = 0; i < count; i++) {
                ports[i] = sockets.get(i).getLocalPort();
            }
            return ports;
        } catch (IOException e) {
            throw new UncheckedIOException("could not obtain " + count + " free port(s) from the OS", e);
        } finally {
            for (ServerSocket socket : sockets) {
                try {
                    socket.close();
                } catch (IOException ignored) {
                    // a port we could not close is still a port we got; nothing to do
                }
            }
        }
    }

    /** True if {@code e} or one of its causes says that an address was already bound. */
    public static boolean isBindFailure(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof java.net.BindException) {
                return true;
            }
            String message = t.getMessage();
            if (message != null && message.contains("Address already in use")) {
                return true;
            }
            if (t.getCause() == t) {
                break;
            }
        }
        return false;
    }
}
