package io.txoutbox.spring.internal;

import java.util.BitSet;
import java.util.function.IntConsumer;
import org.springframework.transaction.support.TransactionSynchronization;
import org.springframework.transaction.support.TransactionSynchronizationManager;

/**
 * Runs an action once after the current transaction commits, whatever the number of calls in it: a wake-up for the
 * relay's lanes of the shards a publish wrote, for the inbox worker after a receive. Looked up among the current
 * transaction's synchronizations, so an inner REQUIRES_NEW transaction (whose outer ones are suspended) gets its own.
 */
final class AfterCommit {

    private AfterCommit() {
    }

    /** Registers {@code action} under {@code owner} unless the current transaction already has it; null: nothing. */
    static void once(Object owner, Runnable action) {
        if (action == null || !TransactionSynchronizationManager.isSynchronizationActive()) {
            return;
        }
        for (TransactionSynchronization s : TransactionSynchronizationManager.getSynchronizations()) {
            if (s instanceof Wake w && w.owner == owner) {
                return;
            }
        }
        TransactionSynchronizationManager.registerSynchronization(new Wake(owner, action));
    }

    /**
     * Registers, under {@code owner}, a call of {@code nudge} for each of {@code shards} after the current transaction
     * commits, once per shard whatever the number of calls in it (the shards of later calls are added); nothing
     * outside a transaction or with a null {@code nudge}.
     */
    static void shards(Object owner, IntConsumer nudge, BitSet shards) {
        if (nudge == null || !TransactionSynchronizationManager.isSynchronizationActive()) {
            return;
        }
        for (TransactionSynchronization s : TransactionSynchronizationManager.getSynchronizations()) {
            if (s instanceof ShardWake w && w.owner == owner) {
                w.shards.or(shards);
                return;
            }
        }
        TransactionSynchronizationManager.registerSynchronization(
                new ShardWake(owner, nudge, (BitSet) shards.clone()));
    }

    private record ShardWake(Object owner, IntConsumer nudge, BitSet shards) implements TransactionSynchronization {
        @Override
        public void afterCommit() {
            shards.stream().forEach(nudge);
        }
    }

    private record Wake(Object owner, Runnable action) implements TransactionSynchronization {
        @Override
        public void afterCommit() {
            action.run();
        }
    }
}
