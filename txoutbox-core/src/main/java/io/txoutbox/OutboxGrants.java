package io.txoutbox;

import io.txoutbox.internal.pg.Identifiers;
import io.txoutbox.internal.Privileges;
import java.util.List;

/**
 * The least privileges of each txoutbox component, as GRANT statements for a role, to run as the tables' owner after
 * {@link OutboxSchema#migrate}:
 *
 * <pre>{@code
 * OutboxGrants.sql(schema, OutboxGrants.Component.RELAY, "app_relay").forEach(System.out::println);
 * }</pre>
 *
 * <p>These are the statements docs/operations.md lists, the ones the tests run each component with (and nothing more), and
 * the ones the relay, the inbox worker and the retention job check at start: a missing one fails the start with the
 * statement to run.
 */
public final class OutboxGrants {

    /** What a role does with the outbox and the inbox. */
    public enum Component {
        /** {@link Outbox#publish}, and writers in other languages that INSERT into the outbox table. */
        WRITER,
        /** {@link PollingRelay}. */
        RELAY,
        /** {@link OutboxRetention} of a plain outbox table (a partitioned one runs as the tables' owner). */
        RETENTION,
        /** {@link OutboxRetention} with an inbox retention, and {@link InboxAdmin#purge}. */
        INBOX_RETENTION,
        /** {@link OutboxAdmin}, {@link InboxAdmin} (but purge), {@link OutboxStatus}, {@link OutboxHealth}, metrics. */
        ADMIN,
        /** {@link OutboxReplay}. */
        REPLAY,
        /** {@link Inbox#receive}, and the Kafka inbox consumer in store mode. */
        INBOX_RECEIVER,
        /** {@link InboxWorker} (plus whatever its handler's own statements need). */
        INBOX_WORKER,
        /** {@link Inbox#once} (plus whatever the work's own statements need). */
        DEDUPE,
        /**
         * {@link OutboxSchema#migrate}: creates the schema and owns what it creates; then grants the others. Owning the
         * tables, it also runs the retention of a partitioned outbox (creating, attaching and dropping partitions
         * needs the owner): give that job this role, or a role that is a member of it.
         */
        MIGRATION_OWNER
    }

    private OutboxGrants() {
    }

    /**
     * The GRANT statements that give {@code role} exactly what {@code component} needs on {@code schema}'s tables,
     * sequence and functions. {@code role} must be a lower-case identifier ({@code [a-z_][a-z0-9_]*}).
     */
    public static List<String> sql(OutboxSchema schema, Component component, String role) {
        if (schema == null) {
            throw new InvalidConfigurationException("grants.schema must be set");
        }
        if (component == null) {
            throw new InvalidConfigurationException("grants.component must be set");
        }
        Identifiers.require("grants.role", role);
        return Privileges.sql(schema, component, role);
    }
}
