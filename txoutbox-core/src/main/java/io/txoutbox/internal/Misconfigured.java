package io.txoutbox.internal;

import io.txoutbox.OutboxException;

/**
 * A setting that the database contradicts, found by a lane — a row-state relay on a table whose relays record their
 * progress in cursors, say. No retry mends it: the lane stops, and its component stops every lane once, with this
 * message (what is wrong and how to fix it) as its {@code failure()}, which health reports.
 */
public final class Misconfigured extends OutboxException {

    private static final long serialVersionUID = 1L;

    public Misconfigured(String message) {
        super(message, null, false);
    }

    /** {@code t} or one of its causes, if it is a {@link Misconfigured}; else {@code null}. */
    public static Misconfigured in(Throwable t) {
        for (Throwable c = t; c != null; c = c.getCause()) {
            if (c instanceof Misconfigured m) {
                return m;
            }
            if (c.getCause() == c) {
                break;
            }
        }
        return null;
    }
}
