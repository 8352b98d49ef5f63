package io.txoutbox.spring.internal;

import org.springframework.transaction.support.TransactionSynchronization;
import org.springframework.transaction.support.TransactionSynchronizationManager;

/**
 * Runs an action once after the current transaction commits, whatever the number of calls in it: a wake-up for the
 * relay after a publish, for the inbox worker after a receive. Looked up among the current transaction's
 * synchronizations, so an inner REQUIRES_NEW transaction (whose outer ones are suspended) gets its own.
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

    private record Wake(Object owner, Runnable action) implements TransactionSynchronization {
        @Override
        public void afterCommit() {
            action.run();
        }
    }
}
