package io.txoutbox.testing.process;

/** Child main for the hook tests: args {@code <hook name> <iterations>}; hits the hook once per iteration. */
public final class HookedMain {

    private HookedMain() {
    }

    public static void main(String[] args) {
        String hook = args[0];
        int iterations = Integer.parseInt(args[1]);
        for (int i = 1; i <= iterations; i++) {
            System.out.println("iteration " + i);
            TestHooks.hit(hook);
        }
        System.out.println("FINISHED");
        System.out.flush();
    }
}
