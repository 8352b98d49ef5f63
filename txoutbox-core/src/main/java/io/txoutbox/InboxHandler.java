package io.txoutbox;

import java.sql.Connection;

/**
 * Applies one inbox event through the worker's connection, inside the worker's transaction: the effects and the
 * row's PROCESSED mark commit together. Must not commit, roll back or change the auto-commit mode. Throw to fail the
 * event: an {@link OutboxException} that is not {@link OutboxException#isRetriable() retriable} (bad format, a rule
 * violation) or a data/constraint/syntax {@code SQLException} fails it permanently; anything else is retried with
 * per-key backoff. Either way only this event's effects are undone (a savepoint), and its key waits.
 */
@FunctionalInterface
public interface InboxHandler {
    void handle(Connection connection, InboxEvent event) throws Exception;
}
