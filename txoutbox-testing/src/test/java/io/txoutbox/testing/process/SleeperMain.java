package io.txoutbox.testing.process;

/** Child main that reports its inputs, then blocks until signalled. */
public final class SleeperMain {

    private SleeperMain() {
    }

    public static void main(String[] args) throws InterruptedException {
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            System.out.println("shutdown hook ran");
            System.out.flush();
        }));
        System.err.println("stderr works");
        System.out.println("READY prop=" + System.getProperty("sleeper.prop") + " env=" + System.getenv("SLEEPER_ENV")
                + " args=" + String.join("|", args));
        System.out.flush();
        // blocks on purpose: the test ends this process with a signal
        Thread.sleep(Long.MAX_VALUE);
    }
}
