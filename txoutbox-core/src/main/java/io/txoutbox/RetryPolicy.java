package io.txoutbox;

import io.txoutbox.internal.config.Checks;
import java.time.Duration;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Per-key retries with exponential backoff and jitter: after the n-th failed attempt the key waits
 * {@code min(maxBackoff, initialBackoff * multiplier^(n-1))}, varied by ±{@code jitter}. After {@code maxAttempts}
 * failures of one event the {@link FailurePolicy} applies. Failures while the whole transport is down (a batch of
 * which nothing was delivered) back off the relay but never exhaust an event's attempts: an outage must not park
 * every key.
 */
public record RetryPolicy(int maxAttempts, Duration initialBackoff, Duration maxBackoff, double multiplier,
        double jitter) {

    public static final int DEFAULT_MAX_ATTEMPTS = 10;
    public static final Duration DEFAULT_INITIAL_BACKOFF = Duration.ofSeconds(1);
    public static final Duration DEFAULT_MAX_BACKOFF = Duration.ofMinutes(5);
    public static final double DEFAULT_MULTIPLIER = 2.0;
    public static final double DEFAULT_JITTER = 0.2;

    public RetryPolicy {
        Checks.retry("retry", maxAttempts, initialBackoff, maxBackoff, multiplier, jitter);
    }

    public static RetryPolicy defaults() {
        return new RetryPolicy(DEFAULT_MAX_ATTEMPTS, DEFAULT_INITIAL_BACKOFF, DEFAULT_MAX_BACKOFF, DEFAULT_MULTIPLIER,
                DEFAULT_JITTER);
    }

    /** Backoff after the given number of failed attempts (1 = the first failure), with jitter. */
    public Duration backoffAfter(int attempts) {
        double base = initialBackoff.toMillis() * Math.pow(multiplier, Math.max(0, attempts - 1));
        double capped = Math.min(base, maxBackoff.toMillis());
        double factor = jitter == 0 ? 1.0 : 1.0 + ThreadLocalRandom.current().nextDouble(-jitter, jitter);
        return Duration.ofMillis(Math.max(1L, Math.round(capped * factor)));
    }

    public RetryPolicy withMaxAttempts(int maxAttempts) {
        return new RetryPolicy(maxAttempts, initialBackoff, maxBackoff, multiplier, jitter);
    }

    public RetryPolicy withBackoff(Duration initial, Duration max) {
        return new RetryPolicy(maxAttempts, initial, max, multiplier, jitter);
    }

    public RetryPolicy withJitter(double jitter) {
        return new RetryPolicy(maxAttempts, initialBackoff, maxBackoff, multiplier, jitter);
    }
}
