package io.txoutbox.spring.internal;

import io.txoutbox.OutboxException;

/**
 * The start stopped because the outbox schema is missing or older than this version of txoutbox needs, and the
 * starter was not to migrate it. Two parts, so Spring Boot's failure report shows them apart ({@link
 * SchemaFailureAnalyzer}): what was found, and what to do, which depends on the application's migration tool.
 */
public final class SchemaNotReadyException extends OutboxException {

    private static final long serialVersionUID = 1L;

    private final String found;
    private final String action;

    public SchemaNotReadyException(String found, String action) {
        super(found + " " + action);
        this.found = found;
        this.action = action;
    }

    /** The schema's state and why the starter did not migrate it. */
    public String found() {
        return found;
    }

    /** How to apply the scripts, for the migration tool in use. */
    public String action() {
        return action;
    }
}
