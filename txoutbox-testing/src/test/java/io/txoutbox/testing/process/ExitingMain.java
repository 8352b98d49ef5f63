package io.txoutbox.testing.process;

/** Child main that prints one line and exits with code 3. */
public final class ExitingMain {

    private ExitingMain() {
    }

    public static void main(String[] args) {
        System.out.println("bye");
        System.exit(3);
    }
}
