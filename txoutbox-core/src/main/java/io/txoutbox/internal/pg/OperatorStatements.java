package io.txoutbox.internal.pg;

import io.txoutbox.EventFilter;
import io.txoutbox.FailedState;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Set;
import java.util.function.Function;

/**
 * What the statements of {@code OutboxAdmin} ({@link AdminStatements}) and {@code InboxAdmin}
 * ({@link InboxAdminStatements}) share: the audited changes' SET clauses and a filter's criteria as fixed SQL
 * fragments with bind parameters. States are quoted literals, so the partial "failed" index is used.
 */
public final class OperatorStatements {

    /** An operator's change of parked or dead events, recorded in {@code operator_action}. */
    public enum Change { REQUEUE, DISCARD, SKIP }

    /** A statement and its bind parameters, in order. */
    public record Bound(String sql, List<Object> binds) {
        public Object[] bindArray() {
            return binds.toArray();
        }
    }

    /** The audit columns; the first bind parameter of every change is the operator (null: the database user). */
    private static final String AUDIT = "operator_name = coalesce(?, current_user), operator_at = now()";

    private OperatorStatements() {
    }

    /**
     * The SET clause of {@code change}; a requeue sets {@code next_attempt_at} to {@code requeueDue} (the outbox:
     * {@code now()}, for its claim floor; the inbox: {@code NULL}). One bind parameter: the operator.
     */
    static String set(Change change, String pending, String dead, String discarded, String requeueDue) {
        return switch (change) {
            case REQUEUE -> "state = " + pending + ", attempts = 0, next_attempt_at = " + requeueDue
                    + ", operator_action = 'REQUEUED', " + AUDIT;
            case DISCARD -> "state = " + discarded + ", next_attempt_at = NULL, operator_action = 'DISCARDED', "
                    + AUDIT;
            case SKIP -> "state = " + dead + ", next_attempt_at = NULL,"
                    + " last_error = coalesce(last_error, '') || ' [skipped by an operator]',"
                    + " operator_action = 'SKIPPED', " + AUDIT;
        };
    }

    /** {@code alias.state IN (...)} with the states as quoted literals ({@code literal} maps a state's name). */
    static String states(String alias, Set<FailedState> states, Function<String, String> literal) {
        return alias + ".state IN (" + String.join(", ", states.stream().map(Enum::name).sorted().map(literal)
                .toList()) + ")";
    }

    /**
     * Appends the filter's criteria (all but its states and consumer) to {@code sql} and their values to
     * {@code binds}; {@code topic} and {@code created} are the table's columns for them.
     */
    static void criteria(StringBuilder sql, List<Object> binds, EventFilter f, String alias, String topic,
            String created) {
        criterion(sql, binds, " AND " + alias + "." + topic + " = ?", f.topic());
        criterion(sql, binds, " AND " + alias + ".event_type = ?", f.eventType());
        criterion(sql, binds, " AND " + alias + ".partition_key = ?", f.key());
        criterion(sql, binds, " AND " + alias + "." + created + " >= ?", timestamp(f.createdFrom()));
        criterion(sql, binds, " AND " + alias + "." + created + " < ?", timestamp(f.createdBefore()));
        criterion(sql, binds, " AND " + alias + ".failed_at >= ?", timestamp(f.failedFrom()));
        criterion(sql, binds, " AND " + alias + ".failed_at < ?", timestamp(f.failedBefore()));
    }

    /** A new list of binds, starting with {@code first}. */
    static List<Object> binds(Object... first) {
        return new ArrayList<>(Arrays.asList(first));
    }

    private static void criterion(StringBuilder sql, List<Object> binds, String fragment, Object value) {
        if (value != null) {
            sql.append(fragment);
            binds.add(value);
        }
    }

    private static OffsetDateTime timestamp(Instant i) {
        return i == null ? null : i.atOffset(ZoneOffset.UTC);
    }
}
