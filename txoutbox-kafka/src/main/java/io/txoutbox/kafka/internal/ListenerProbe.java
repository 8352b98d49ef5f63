package io.txoutbox.kafka.internal;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.ByteBuffer;

/**
 * What a broker listener speaks, asked the cheapest way: one unencrypted Kafka request (ApiVersions v0) on a fresh
 * TCP connection. A PLAINTEXT or SASL_PLAINTEXT listener answers it; a TLS listener takes it for a broken handshake
 * and answers with a TLS alert or closes the connection. Asked before an unencrypted client is made (none is made at
 * a TLS listener: KAFKA-4090) and to explain a connection that keeps timing out, at most every few seconds; it sends
 * no credentials.
 */
final class ListenerProbe {

    enum Answer {
        /** A Kafka response came back: the listener is not TLS. */
        KAFKA_PLAINTEXT,
        /** A TLS alert came back: the listener expects TLS. */
        TLS_ALERT,
        /** The listener closed the connection at the first request without a word (what a TLS listener may do). */
        CLOSED,
        /** Nothing came back in time, or something else than Kafka or TLS. */
        UNKNOWN,
        /** No TCP connection (refused, no route, timed out): not a protocol question. */
        UNREACHABLE
    }

    private static final byte TLS_ALERT_RECORD = 0x15;
    private static final byte TLS_HANDSHAKE_RECORD = 0x16;
    private static final int CORRELATION_ID = 0x7478_6f62; // "txob"

    private ListenerProbe() {
    }

    /** How long a probe waits at most for the TCP connection (a blackholed address must not hold the caller long). */
    private static final int CONNECT_TIMEOUT_MS = 1_000;

    /**
     * Probes {@code host:port}, waiting at most {@code timeoutMs} for the answer, and for the connection at most that
     * or {@value #CONNECT_TIMEOUT_MS} ms, whichever is shorter.
     */
    static Answer probe(String hostPort, int timeoutMs) {
        InetSocketAddress address;
        try {
            int colon = hostPort.lastIndexOf(':');
            String host = hostPort.substring(0, colon).replace("[", "").replace("]", "");
            address = new InetSocketAddress(host, Integer.parseInt(hostPort.substring(colon + 1).trim()));
        } catch (RuntimeException e) {
            return Answer.UNKNOWN;
        }
        try (Socket socket = new Socket()) {
            try {
                socket.connect(address, Math.min(timeoutMs, CONNECT_TIMEOUT_MS));
            } catch (IOException e) {
                return Answer.UNREACHABLE;
            }
            socket.setSoTimeout(timeoutMs);
            OutputStream out = socket.getOutputStream();
            out.write(apiVersionsRequest());
            out.flush();
            InputStream in = socket.getInputStream();
            byte[] head = new byte[8];
            int read;
            try {
                read = readUpTo(in, head);
            } catch (SocketTimeoutException e) {
                return Answer.UNKNOWN;
            } catch (IOException e) { // reset by the peer
                return Answer.CLOSED;
            }
            if (read == 0) {
                return Answer.CLOSED;
            }
            if ((head[0] == TLS_ALERT_RECORD || head[0] == TLS_HANDSHAKE_RECORD) && read > 1 && head[1] == 0x03) {
                return Answer.TLS_ALERT;
            }
            if (read == 8 && ByteBuffer.wrap(head, 4, 4).getInt() == CORRELATION_ID) {
                return Answer.KAFKA_PLAINTEXT;
            }
            return Answer.UNKNOWN;
        } catch (IOException e) {
            return Answer.UNKNOWN;
        }
    }

    /** Size, api key 18 (ApiVersions), version 0, correlation id, null client id. */
    private static byte[] apiVersionsRequest() {
        ByteBuffer b = ByteBuffer.allocate(14);
        b.putInt(10).putShort((short) 18).putShort((short) 0).putInt(CORRELATION_ID).putShort((short) -1);
        return b.array();
    }

    /** Reads until {@code buffer} is full or the stream ends; returns the bytes read. */
    private static int readUpTo(InputStream in, byte[] buffer) throws IOException {
        int total = 0;
        while (total < buffer.length) {
            int n = in.read(buffer, total, buffer.length - total);
            if (n < 0) {
                break;
            }
            total += n;
        }
        return total;
    }
}
