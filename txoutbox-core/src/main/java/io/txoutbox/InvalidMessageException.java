package io.txoutbox;

/**
 * A message or configuration value was rejected before anything was written. The caller's transaction is untouched
 * and still usable: txoutbox validates everything in the client, so PostgreSQL never sees the bad value.
 */
public class InvalidMessageException extends OutboxException {

    private static final long serialVersionUID = 1L;

    public InvalidMessageException(String message) {
        super(message);
    }

    public InvalidMessageException(String message, Throwable cause) {
        super(message, cause);
    }
}
