package io.txoutbox.kafka.internal;

import java.io.IOException;
import java.io.InputStream;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.ByteBuffer;

/** A fake broker listener for the probes' tests: reads one Kafka request per connection, answers it, closes. */
final class FakeListener {

    /** What a TLS listener answers to an unencrypted request: a fatal alert record. */
    static final byte[] TLS_ALERT = {0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0x0a};

    interface Reply {
        /** The bytes to send back for {@code request} (its size prefix included). */
        byte[] to(byte[] request);
    }

    private FakeListener() {
    }

    /**
     * Answers {@code connections} connections of {@code server} on a thread of its own, each one size-prefixed request,
     * with {@code reply}, then closes the connection, as a TLS listener does after its alert.
     */
    static Thread serve(ServerSocket server, int connections, Reply reply) {
        Thread t = new Thread(() -> {
            for (int i = 0; i < connections; i++) {
                try (Socket s = server.accept()) {
                    InputStream in = s.getInputStream();
                    byte[] size = in.readNBytes(4);
                    int length = ByteBuffer.wrap(size).getInt();
                    byte[] request = new byte[4 + length];
                    System.arraycopy(size, 0, request, 0, 4);
                    System.arraycopy(in.readNBytes(length), 0, request, 4, length);
                    s.getOutputStream().write(reply.to(request));
                    s.getOutputStream().flush();
                } catch (IOException ignored) {
                    return; // the probe closed first
                }
            }
        });
        t.start();
        return t;
    }
}
