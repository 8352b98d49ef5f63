package io.txoutbox.internal;

import io.txoutbox.EventDetails;
import io.txoutbox.EventFilter;
import io.txoutbox.FailedEvent;
import io.txoutbox.FailedState;
import io.txoutbox.internal.config.Checks;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Instant;
import java.util.EnumSet;
import java.util.Objects;
import java.util.Set;
import java.util.UUID;

/**
 * What {@code OutboxAdmin} and {@code InboxAdmin} share: the rules of their arguments, the mapping of their rows
 * (the columns of {@code AdminStatements} and {@code InboxAdminStatements}, in record order) and the paging of a
 * bulk change.
 */
public final class OperatorCalls {

    /** Rows a bulk change reads and changes per transaction. */
    public static final int BULK_PAGE = 1_000;
    /** The largest page a list returns. */
    public static final int MAX_LIMIT = 10_000;

    private OperatorCalls() {
    }

    /** Refuses an operator name that is blank, too long or not printable (null is the database user). */
    public static void requireOperator(String operator) {
        if (operator == null) {
            return;
        }
        if (operator.isBlank() || operator.length() > 200 || operator.chars().anyMatch(Character::isISOControl)) {
            throw new IllegalArgumentException("operator must name who makes the change (1 to 200 printable"
                    + " characters, e.g. a user name or a ticket), or be null for the database user; was '"
                    + MessageRules.printable(operator) + "'");
        }
    }

    public static void requireLimit(int limit) {
        if (limit < 1 || limit > MAX_LIMIT) {
            throw new IllegalArgumentException("limit must be between 1 and " + MAX_LIMIT + ", was " + limit
                    + ": page through more with the last id() of a page as the next afterId");
        }
    }

    /** The outbox has no consumers: a filter that names one is a mistake (meant for the inbox?). */
    public static EventFilter requireNoConsumer(EventFilter filter) {
        Objects.requireNonNull(filter, "filter");
        if (filter.consumer() != null) {
            throw new IllegalArgumentException("EventFilter.consumer ('" + MessageRules.printable(filter.consumer())
                    + "') applies to inbox events only: use InboxAdmin for a consumer's events, or drop consumer(...)"
                    + " from the filter for the outbox");
        }
        return filter;
    }

    /** Inbox events belong to a consumer: a filter must name it. */
    public static EventFilter requireConsumer(String verb, EventFilter filter) {
        Objects.requireNonNull(filter, "filter");
        if (filter.consumer() == null) {
            throw new IllegalArgumentException("InboxAdmin." + verb + " needs the filter's consumer: inbox events"
                    + " belong to one; add .consumer(name) to the filter, e.g."
                    + " EventFilter.parked().consumer(\"billing\")");
        }
        Checks.consumerArgument("EventFilter.consumer", filter.consumer());
        return filter;
    }

    /** The filter's states a change applies to (parked and dead; discarded rows are final). */
    public static Set<FailedState> changeable(String action, EventFilter filter) {
        Set<FailedState> states = EnumSet.copyOf(filter.states());
        states.remove(FailedState.DISCARDED);
        if (states.isEmpty()) {
            throw new IllegalArgumentException(action + " applies to PARKED or DEAD events (DISCARDED is final); the"
                    + " filter names only " + filter.states());
        }
        return states;
    }

    /** How a change is logged: the operator, or that the database user made it. */
    public static String who(String operator) {
        return operator == null ? "(db user)" : operator;
    }

    /** A row of a list's 15 columns. */
    public static FailedEvent failedEvent(ResultSet rs) throws SQLException {
        return new FailedEvent(rs.getLong(1), (UUID) rs.getObject(2), rs.getString(3),
                FailedState.valueOf(rs.getString(4)), rs.getString(5), rs.getString(6), rs.getString(7), rs.getInt(8),
                rs.getString(9), instant(rs, 10), instant(rs, 11), rs.getLong(12), rs.getString(13),
                rs.getString(14), instant(rs, 15));
    }

    /** A row of a show's 22 columns. */
    public static EventDetails details(ResultSet rs) throws SQLException {
        long version = rs.getLong(10);
        Long aggregateVersion = rs.wasNull() ? null : version;
        return new EventDetails(rs.getLong(1), (UUID) rs.getObject(2), rs.getString(3), rs.getString(4),
                rs.getString(5), rs.getString(6), rs.getInt(7), rs.getString(8), rs.getString(9), aggregateVersion,
                rs.getString(11), rs.getString(12), instant(rs, 13), rs.getInt(14), instant(rs, 15), rs.getString(16),
                instant(rs, 17), instant(rs, 18), rs.getString(19), rs.getString(20), instant(rs, 21),
                rs.getBytes(22));
    }

    private static Instant instant(ResultSet rs, int column) throws SQLException {
        Timestamp ts = rs.getTimestamp(column);
        return ts == null ? null : ts.toInstant();
    }

    /** What one page of a bulk change did: the last id it read, how many rows it read, how many it changed. */
    public record PageDone(long lastId, int read, int changed) {
    }

    /** One page of a bulk change after {@code afterId}, in a transaction of its own. */
    @FunctionalInterface
    public interface Page {
        PageDone run(long afterId);
    }

    /**
     * Runs {@code page} from the start until a page reads fewer than {@value #BULK_PAGE} rows; returns the rows
     * changed.
     * A row that left the expected state in between (a relay or worker took it, another operator changed it) is not
     * touched, as each page's UPDATE checks the state again.
     */
    public static long inPages(Page page) {
        long total = 0;
        long after = 0;
        while (true) {
            PageDone done = page.run(after);
            total += done.changed();
            after = done.lastId();
            if (done.read() < BULK_PAGE) {
                return total;
            }
        }
    }
}
