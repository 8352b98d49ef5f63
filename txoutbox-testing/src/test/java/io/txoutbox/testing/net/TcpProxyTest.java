package io.txoutbox.testing.net;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketException;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(30)
class TcpProxyTest {

    @Test
    void passesTrafficStallsWhenFrozenResumesAndCuts() throws Exception {
        try (EchoServer echo = new EchoServer(); TcpProxy proxy = TcpProxy.start("127.0.0.1", echo.port());
             Socket socket = new Socket()) {
            assertThat(proxy.port()).isNotEqualTo(echo.port());
            socket.connect(new InetSocketAddress(proxy.host(), proxy.port()), 2_000);
            socket.setSoTimeout(2_000);
            InputStream in = socket.getInputStream();
            OutputStream out = socket.getOutputStream();

            assertThat(roundTrip(in, out, "ping")).isEqualTo("ping");
            await().atMost(Duration.ofSeconds(5)).until(() -> proxy.connectionCount() == 1);

            proxy.freeze();
            assertThat(proxy.isFrozen()).isTrue();
            out.write("late".getBytes(StandardCharsets.US_ASCII));
            out.flush();
            socket.setSoTimeout(500);
            assertThatThrownBy(() -> in.read()).isInstanceOf(SocketTimeoutException.class);

            proxy.unfreeze();
            socket.setSoTimeout(5_000);
            assertThat(readExactly(in, 4)).isEqualTo("late");

            proxy.cut();
            assertThat(readUntilClosed(in)).isTrue();
        }
    }

    @Test
    void addsDelay() throws Exception {
        try (EchoServer echo = new EchoServer();
             TcpProxy proxy = TcpProxy.builder().target("127.0.0.1", echo.port())
                     .delay(Duration.ofMillis(200), Duration.ZERO).start();
             Socket socket = new Socket(proxy.host(), proxy.port())) {
            socket.setSoTimeout(5_000);
            long start = System.nanoTime();

            assertThat(roundTrip(socket.getInputStream(), socket.getOutputStream(), "slow")).isEqualTo("slow");

            // 200 ms each way
            assertThat(Duration.ofNanos(System.nanoTime() - start)).isGreaterThanOrEqualTo(Duration.ofMillis(350));
        }
    }

    @Test
    void closeIsIdempotentAndReleasesThePort() throws Exception {
        TcpProxy proxy;
        try (EchoServer echo = new EchoServer()) {
            proxy = TcpProxy.start("127.0.0.1", echo.port());
            proxy.close();
            proxy.close();
        }
        try (Socket socket = new Socket()) {
            assertThatThrownBy(() -> socket.connect(new InetSocketAddress("127.0.0.1", proxy.port()), 1_000))
                    .isInstanceOf(IOException.class);
        }
    }

    @Test
    void rejectsABadTarget() {
        assertThatThrownBy(() -> TcpProxy.builder().target("127.0.0.1", 0)).hasMessageContaining("tcpProxy.targetPort");
        assertThatThrownBy(() -> TcpProxy.builder().start()).hasMessageContaining("tcpProxy.target");
    }

    private static String roundTrip(InputStream in, OutputStream out, String text) throws IOException {
        out.write(text.getBytes(StandardCharsets.US_ASCII));
        out.flush();
        return readExactly(in, text.length());
    }

    private static String readExactly(InputStream in, int length) throws IOException {
        byte[] bytes = in.readNBytes(length);
        return new String(bytes, StandardCharsets.US_ASCII);
    }

    /** True once the connection reports EOF or a reset (within the socket timeout). */
    private static boolean readUntilClosed(InputStream in) throws IOException {
        try {
            while (true) {
                if (in.read() < 0) {
                    return true;
                }
            }
        } catch (SocketException reset) {
            return true;
        }
    }
}
