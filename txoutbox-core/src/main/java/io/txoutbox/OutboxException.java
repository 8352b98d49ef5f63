package io.txoutbox;

/**
 * The one unchecked exception txoutbox throws. Its message says what failed, for which event, and what to do.
 * {@link #isRetriable()} tells whether the same call may succeed later (a lost connection, a serialization failure)
 * or will fail again until something changes (bad input, a missing table).
 */
public class OutboxException extends RuntimeException {

    private static final long serialVersionUID = 1L;

    private final boolean retriable;

    public OutboxException(String message) {
        this(message, null, false);
    }

    public OutboxException(String message, Throwable cause) {
        this(message, cause, false);
    }

    public OutboxException(String message, Throwable cause, boolean retriable) {
        super(message, cause);
        this.retriable = retriable;
    }

    public boolean isRetriable() {
        return retriable;
    }
}
