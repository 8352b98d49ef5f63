package io.txoutbox.internal.config;

import io.txoutbox.RetryPolicy;
import java.time.Duration;
import java.util.function.Function;

/**
 * A builder's retry policy while it is being set one value at a time (from settings): the values are checked
 * together when the builder builds, so their order does not matter ({@code retry.max-backoff} may come after a
 * larger {@code retry.initial-backoff}).
 */
public final class RetryDraft {

    private final String property;
    public int maxAttempts;
    public Duration initialBackoff;
    public Duration maxBackoff;
    public double multiplier;
    public double jitter;

    /** The draft of {@code component}'s policy ({@code "relay"}: its values are {@code relay.retry.*}). */
    public RetryDraft(String component, RetryPolicy from) {
        this.property = component + ".retry";
        set(from);
    }

    public void set(RetryPolicy p) {
        if (p == null) {
            throw Checks.invalid(property, "must not be null");
        }
        maxAttempts = p.maxAttempts();
        initialBackoff = p.initialBackoff();
        maxBackoff = p.maxBackoff();
        multiplier = p.multiplier();
        jitter = p.jitter();
    }

    /** The policy, its values checked under the component's names ({@code relay.retry.maxBackoff}). */
    public RetryPolicy toPolicy() {
        Checks.retry(property, maxAttempts, initialBackoff, maxBackoff, multiplier, jitter);
        return new RetryPolicy(maxAttempts, initialBackoff, maxBackoff, multiplier, jitter);
    }

    /**
     * Adds the {@code retry.*} settings (max-attempts, initial-backoff, max-backoff, multiplier, jitter) to a
     * component's descriptor: {@code draft} is its builder's draft, {@code policy} its record's policy.
     */
    public static <B, C> DescriptorBuilder<B, C> addSettings(DescriptorBuilder<B, C> d,
            Function<B, RetryDraft> draft, Function<C, RetryPolicy> policy) {
        return addSettings(d, RetryPolicy.defaults(), draft, policy);
    }

    /** {@link #addSettings(DescriptorBuilder, Function, Function)} for a component with other defaults. */
    public static <B, C> DescriptorBuilder<B, C> addSettings(DescriptorBuilder<B, C> d,
            RetryPolicy defaults, Function<B, RetryDraft> draft, Function<C, RetryPolicy> policy) {
        return d.add("retry.maxAttempts", Integer.class, defaults.maxAttempts(), "", "Failed attempts "
                        + "of one event before the failure policy applies",
                        (b, v) -> draft.apply(b).maxAttempts = v, c -> policy.apply(c).maxAttempts())
                .add("retry.initialBackoff", Duration.class, defaults.initialBackoff(), "", "A key's "
                        + "wait after its first failure", (b, v) -> draft.apply(b).initialBackoff = v,
                        c -> policy.apply(c).initialBackoff())
                .add("retry.maxBackoff", Duration.class, defaults.maxBackoff(), "", "The longest wait "
                        + "of a key between attempts", (b, v) -> draft.apply(b).maxBackoff = v,
                        c -> policy.apply(c).maxBackoff())
                .add("retry.multiplier", Double.class, defaults.multiplier(), "", "Growth of the wait "
                        + "per failed attempt (>= 1.0)", (b, v) -> draft.apply(b).multiplier = v,
                        c -> policy.apply(c).multiplier())
                .add("retry.jitter", Double.class, defaults.jitter(), "", "Random variation of each "
                        + "wait, in [0, 1)", (b, v) -> draft.apply(b).jitter = v, c -> policy.apply(c).jitter());
    }
}
