package io.txoutbox.testing.net;

import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;

/** The PostgreSQL v3 wire format as far as {@link TransactionPoolingProxy} needs it: message framing, error fields. */
final class PgWire {

    static final int SSL_REQUEST = 80877103;
    static final int GSS_REQUEST = 80877104;
    static final int CANCEL_REQUEST = 80877102;
    static final int PROTOCOL_3 = 196608;

    private PgWire() {
    }

    static byte[] readBody(DataInputStream in) throws IOException {
        int length = in.readInt();
        if (length < 4 || length > 1 << 30) {
            throw new IOException("bad message length " + length);
        }
        byte[] body = new byte[length - 4];
        in.readFully(body);
        return body;
    }

    static byte[] message(int type, byte[] body) {
        byte[] m = new byte[5 + body.length];
        m[0] = (byte) type;
        writeInt(m, 1, body.length + 4);
        System.arraycopy(body, 0, m, 5, body.length);
        return m;
    }

    static byte[] withLength(byte[] body) {
        byte[] m = new byte[4 + body.length];
        writeInt(m, 0, body.length + 4);
        System.arraycopy(body, 0, m, 4, body.length);
        return m;
    }

    static void writeError(OutputStream out, String text) throws IOException {
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        for (String[] field : new String[][] {{"S", "FATAL"}, {"V", "FATAL"}, {"C", "08006"}, {"M", text}}) {
            b.write(field[0].charAt(0));
            b.write(field[1].getBytes(StandardCharsets.UTF_8));
            b.write(0);
        }
        b.write(0);
        out.write(message('E', b.toByteArray()));
        out.flush();
    }

    static String errorText(byte[] body) {
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

    static int readInt(byte[] b, int at) {
        return ((b[at] & 0xff) << 24) | ((b[at + 1] & 0xff) << 16) | ((b[at + 2] & 0xff) << 8) | (b[at + 3] & 0xff);
    }

    static void writeInt(byte[] b, int at, int v) {
        b[at] = (byte) (v >>> 24);
        b[at + 1] = (byte) (v >>> 16);
        b[at + 2] = (byte) (v >>> 8);
        b[at + 3] = (byte) v;
    }

    static void closeQuietly(Socket s) {
        try {
            s.close();
        } catch (IOException ignored) {
            // closing
        }
    }
}
