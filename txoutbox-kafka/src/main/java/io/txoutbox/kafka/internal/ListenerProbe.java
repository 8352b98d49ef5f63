package io.txoutbox.kafka.internal;

import java.io.DataInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

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
        InetSocketAddress address = address(hostPort);
        if (address == null) {
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

    /** The most advertised brokers read from one Metadata answer. */
    private static final int MAX_ADVERTISED = 64;

    /**
     * The brokers ({@code host:port}) that the listener at {@code hostPort} advertises for itself — where a client that
     * bootstrapped there connects next — read with one unencrypted Metadata v4 request for no topic; empty when it
     * does not answer one in {@code timeoutMs} (a TLS or SASL listener, an older or busy broker). Sends no credentials.
     */
    static List<String> advertised(String hostPort, int timeoutMs) {
        InetSocketAddress address = address(hostPort);
        if (address == null) {
            return List.of();
        }
        try (Socket socket = new Socket()) {
            socket.connect(address, Math.min(timeoutMs, CONNECT_TIMEOUT_MS));
            socket.setSoTimeout(timeoutMs);
            OutputStream out = socket.getOutputStream();
            out.write(metadataRequest());
            out.flush();
            DataInputStream in = new DataInputStream(socket.getInputStream());
            int size = in.readInt();
            if (size < 12 || size > 1 << 20) {
                return List.of(); // not a Metadata answer for no topic (a TLS alert reads as ~336 MB)
            }
            ByteBuffer b = ByteBuffer.wrap(in.readNBytes(size));
            if (b.remaining() < size || b.getInt() != CORRELATION_ID) {
                return List.of();
            }
            b.getInt(); // throttle_time_ms
            int brokers = b.getInt();
            List<String> found = new ArrayList<>();
            for (int i = 0; i < brokers && found.size() < MAX_ADVERTISED; i++) {
                b.getInt(); // node_id
                String host = string(b);
                int port = b.getInt();
                string(b); // rack
                if (host != null) {
                    found.add((host.indexOf(':') >= 0 ? "[" + host + "]" : host) + ":" + port);
                }
            }
            return List.copyOf(found);
        } catch (IOException | RuntimeException e) {
            return List.of();
        }
    }

    private static InetSocketAddress address(String hostPort) {
        try {
            int colon = hostPort.lastIndexOf(':');
            String host = hostPort.substring(0, colon).replace("[", "").replace("]", "");
            return new InetSocketAddress(host, Integer.parseInt(hostPort.substring(colon + 1).trim()));
        } catch (RuntimeException e) {
            return null;
        }
    }

    /** A Kafka (nullable) STRING: int16 length, -1 for null, then UTF-8 bytes. */
    private static String string(ByteBuffer b) {
        short length = b.getShort();
        if (length < 0) {
            return null;
        }
        byte[] bytes = new byte[length];
        b.get(bytes);
        return new String(bytes, StandardCharsets.UTF_8);
    }

    /**
     * Size, api key 3 (Metadata), version 4 (the oldest Kafka 4 answers, non-flexible), correlation id, null client
     * id; an empty topic array (no topic: the brokers only) and no auto-creation.
     */
    private static byte[] metadataRequest() {
        ByteBuffer b = ByteBuffer.allocate(19);
        b.putInt(15).putShort((short) 3).putShort((short) 4).putInt(CORRELATION_ID).putShort((short) -1)
                .putInt(0).put((byte) 0);
        return b.array();
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
