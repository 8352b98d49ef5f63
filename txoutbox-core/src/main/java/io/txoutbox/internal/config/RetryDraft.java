package io.txoutbox.internal.config;

import io.txoutbox.RetryPolicy;
import java.time.Duration;

/**
 * A builder's retry policy while it is being set one value at a time (from settings): the values are checked
 * together when the builder builds, so their order does not matter ({@code retry.max-backoff} may come after a
 * larger {@code retry.initial-backoff}).
 */
public final class RetryDraft {

    public int maxAttempts;
    public Duration initialBackoff;
    public Duration maxBackoff;
    public double multiplier;
    public double jitter;

    public RetryDraft(RetryPolicy from) {
        set(from);
    }

    public void set(RetryPolicy p) {
        if (p == null) {
            throw Checks.invalid("retry", "must not be null");
        }
        maxAttempts = p.maxAttempts();
        initialBackoff = p.initialBackoff();
        maxBackoff = p.maxBackoff();
        multiplier = p.multiplier();
        jitter = p.jitter();
    }

    public RetryPolicy toPolicy() {
        return new RetryPolicy(maxAttempts, initialBackoff, maxBackoff, multiplier, jitter);
    }
}
