package io.txoutbox;

import io.txoutbox.internal.config.Checks;
import io.txoutbox.internal.config.DescriptorBuilder;
import io.txoutbox.internal.pg.Identifiers;
import io.txoutbox.internal.pg.PgErrors;
import io.txoutbox.internal.pg.ReadCommitted;
import io.txoutbox.internal.SchemaMigrator;
import io.txoutbox.internal.progress.ProgressConversion;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.HexFormat;
import java.util.Map;
import javax.sql.DataSource;

/**
 * Where the outbox lives: the PostgreSQL schema, the outbox table's name, and the number of shards the partition keys
 * are hashed into (the unit of relay ownership; fixed when the table is created).
 *
 * <pre>{@code
 * OutboxSchema schema = OutboxSchema.builder().schema("orders").build();
 * schema.migrate(dataSource);   // idempotent, safe to run from every instance at start
 * }</pre>
 *
 * Names are validated against {@code ^[a-z_][a-z0-9_]{0,62}$} and always quoted in SQL.
 *
 * @param schema       PostgreSQL schema, default {@value #DEFAULT_SCHEMA}
 * @param outboxTable  outbox table name, default {@value #DEFAULT_OUTBOX_TABLE}
 * @param shards       shard count, default {@value #DEFAULT_SHARDS}
 * @param partitioning {@code null} for a plain table (the default), else the periods of a time-partitioned one
 * @param progress     how the relay records that an event was published, default {@link Progress#ROW_STATE}
 */
public record OutboxSchema(String schema, String outboxTable, int shards, OutboxPartitioning partitioning,
        Progress progress) {

    /**
     * How the relay records that an event was published (docs/progress-models.md). Every component built for a table
     * — relays, status, admin, retention, replay — reads its events by this model, so every instance of a service
     * must use the same one.
     */
    public enum Progress {
        /** One UPDATE per published event ({@code state = 'PUBLISHED'}, {@code published_at}). */
        ROW_STATE,
        /**
         * A cursor per relay lane, advanced once per settlement in {@code <outbox>_progress}: a published event's row
         * is not written again, so the table is append-only until retention (rows that fail are written as in
         * {@link #ROW_STATE}). {@code published_at} is then set only for events that failed before.
         */
        CURSOR
    }

    public static final String DEFAULT_SCHEMA = "public";
    public static final String DEFAULT_OUTBOX_TABLE = "outbox_event";
    public static final int DEFAULT_SHARDS = 32;
    public static final int MAX_SHARDS = 4096;

    /**
     * Every setting of the outbox's location ({@code txoutbox.schema.*}); {@code partitioning.period} unset is a plain
     * table, set it partitions the table, with {@code partitioning.ahead} (default per period) created ahead.
     */
    public static final ConfigDescriptor<Builder, OutboxSchema> DESCRIPTOR =
            DescriptorBuilder.<Builder, OutboxSchema>define("schema")
                    .add("schema", String.class, DEFAULT_SCHEMA, "", "PostgreSQL schema of the outbox and inbox "
                            + "tables", Builder::schema, OutboxSchema::schema)
                    .add("outboxTable", String.class, DEFAULT_OUTBOX_TABLE, "", "Name of the outbox table",
                            Builder::outboxTable, OutboxSchema::outboxTable)
                    .add("shards", Integer.class, DEFAULT_SHARDS, "", "Shards the partition keys are hashed into "
                            + "(1 to " + MAX_SHARDS + "); fixed when the table is created", Builder::shards,
                            OutboxSchema::shards)
                    .add("progress", Progress.class, Progress.ROW_STATE, "", "How the relay records a published "
                            + "event: ROW_STATE (an UPDATE per event) or CURSOR (a cursor per relay lane; the table "
                            + "stays append-only)", Builder::progress, OutboxSchema::progress)
                    .add("partitioning.period", OutboxPartitioning.Period.class, null, "", "DAY, WEEK or MONTH: "
                            + "a time-partitioned outbox table; unset: a plain one",
                            (b, v) -> b.partitionPeriod = v,
                            c -> c.partitioning() == null ? null : c.partitioning().period())
                    .add("partitioning.ahead", Integer.class, null, "partitions", "Partitions kept created after "
                            + "the current one (1 to " + OutboxPartitioning.MAX_AHEAD + "; default 7 for DAY, 4 for "
                            + "WEEK, 2 for MONTH)", (b, v) -> b.partitionAhead = v,
                            c -> c.partitioning() == null ? null : c.partitioning().ahead())
                    .build();

    /** A plain (not partitioned) outbox table. */
    public OutboxSchema(String schema, String outboxTable, int shards) {
        this(schema, outboxTable, shards, null);
    }

    /** An outbox table on the row-state progress model. */
    public OutboxSchema(String schema, String outboxTable, int shards, OutboxPartitioning partitioning) {
        this(schema, outboxTable, shards, partitioning, Progress.ROW_STATE);
    }

    public OutboxSchema {
        Checks.identifier("schema.schema", schema);
        Checks.identifier("schema.outboxTable", outboxTable);
        Checks.roomForSuffix("schema.outboxTable", outboxTable, Identifiers.LONGEST_SUFFIX);
        Checks.between("schema.shards", shards, 1, MAX_SHARDS);
        Checks.notNull("schema.progress", progress);
    }

    /** {@code public.outbox_event} with {@value #DEFAULT_SHARDS} shards. */
    public static OutboxSchema defaults() {
        return builder().build();
    }

    public static Builder builder() {
        return new Builder();
    }

    /**
     * The shard the outbox table gives {@code message}'s row — its generated {@code shard} column, computed here the
     * same way: the first 4 bytes of the MD5 of its key (of its event id when it has none), modulo {@link #shards()}.
     * A relay lane works the shards {@code shard % lanes == lane} ({@link PollingRelay#nudge(int)}).
     */
    public int shardOf(OutboxMessage message) {
        return io.txoutbox.internal.Shards.of(message.key(), message.eventId(), shards);
    }

    /** Whether the outbox table is time-partitioned ({@link Builder#partitioned}). */
    public boolean isPartitioned() {
        return partitioning != null;
    }

    /**
     * Creates or upgrades the tables and functions, in one transaction serialised by an advisory lock, so any number
     * of instances may call it at once. Scripts already applied are skipped; a changed script is refused.
     *
     * <p>With {@link Builder#partitioned partitioning} it then turns a plain outbox table into a partitioned one
     * (once; an existing table becomes the partition of everything before the next period, without copying rows)
     * and creates the partitions ahead. Converting a table that holds rows validates a constraint by one scan that
     * does not block writers, then takes an exclusive lock for a catalog change only (milliseconds).
     */
    public void migrate(DataSource dataSource) {
        try (Connection c = ReadCommitted.open(dataSource)) {
            migrate(c);
        } catch (SQLException e) {
            throw new OutboxException("migration of " + this + " failed: could not connect: " + e.getMessage(), e,
                    true);
        }
    }

    /**
     * Takes this table back from {@link Progress#CURSOR} to {@link Progress#ROW_STATE}: every event the relays'
     * cursors published is marked {@code PUBLISHED} (in short transactions by id range; {@code published_at} is its
     * {@code created_at}), held events become pending again, and the cursors are deleted. Run it with every relay of
     * the table stopped, then start them with {@code ROW_STATE}; a row-state relay refuses a table that still has
     * cursors (it would send their events again). Idempotent: a stopped run resumes; nothing to do on a row-state
     * table. Returns how many events it marked.
     */
    public long convertProgressToRowState(DataSource dataSource) {
        try (Connection c = ReadCommitted.open(dataSource)) {
            boolean auto = c.getAutoCommit();
            c.setAutoCommit(false);
            try {
                return ProgressConversion.toRowState(c, this);
            } catch (SQLException e) {
                c.rollback();
                throw e;
            } finally {
                c.setAutoCommit(auto);
            }
        } catch (SQLException e) {
            throw new OutboxException("converting " + this + " to row-state progress failed: " + e.getMessage(), e,
                    true);
        }
    }

    /** Like {@link #migrate(DataSource)} on a given connection; commits, and restores its autocommit mode. */
    public void migrate(Connection connection) {
        new SchemaMigrator(this).migrate(connection);
    }

    /**
     * The history table in the outbox's schema when the scripts ({@code classpath:io/txoutbox/db/postgresql}) are
     * applied by Flyway instead of {@link #migrate}: its own table, so they never mix with the application's own
     * {@code V1__} scripts. {@link #appliedVersion} reads it.
     */
    public static final String FLYWAY_HISTORY_TABLE = "txoutbox_flyway_history";

    /** Where the schema scripts are, for a migration tool ({@code V<n>__<description>.sql}, Flyway placeholders). */
    public static final String SCRIPT_LOCATION = "classpath:io/txoutbox/db/postgresql";

    /** The newest schema version of this library: the number of its last script. */
    public static int latestVersion() {
        return SchemaMigrator.latestVersion();
    }

    /**
     * The schema version of this outbox table in the database: the highest that {@link #migrate} recorded for it, or
     * else the highest that Flyway applied into {@link #FLYWAY_HISTORY_TABLE}; 0 when neither has any. Compare it with
     * {@link #latestVersion()} to refuse to start on a schema that is missing or old.
     */
    public int appliedVersion(DataSource dataSource) {
        try (Connection c = ReadCommitted.open(dataSource)) {
            return SchemaMigrator.appliedVersion(c, this);
        } catch (SQLException e) {
            throw new OutboxException("could not read the schema version of " + this + ": " + e.getMessage(), e,
                    PgErrors.isRetriable(e));
        }
    }

    /** The outbox table's qualified, quoted name for SQL, e.g. {@code "public"."outbox_event"}. */
    public String qualifiedOutboxTable() {
        return Identifiers.quote(schema) + "." + Identifiers.quote(outboxTable);
    }

    /**
     * The channel of the optional wake-up {@code NOTIFY} for this outbox table: {@code txoutbox.<schema>.<table>}, or,
     * where that passes PostgreSQL's 63-byte limit for channel names, its first 46 characters and a hash of the
     * whole (the writer's {@code pg_notify} would fail, and the relay's {@code LISTEN} be truncated to another name).
     */
    public String notifyChannel() {
        String full = "txoutbox." + schema + "." + outboxTable;
        if (full.length() <= MAX_CHANNEL_LENGTH) {
            return full;
        }
        try {
            byte[] hash = MessageDigest.getInstance("SHA-256")
                    .digest(full.getBytes(StandardCharsets.UTF_8));
            return full.substring(0, MAX_CHANNEL_LENGTH - 17) + "." + HexFormat.of().formatHex(hash, 0, 8);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is part of every Java runtime", e);
        }
    }

    /** PostgreSQL's NAMEDATALEN - 1: the longest channel name (names here are ASCII, one byte a character). */
    private static final int MAX_CHANNEL_LENGTH = 63;

    @Override
    public String toString() {
        return schema + "." + outboxTable + " (" + shards + " shards"
                + (partitioning == null ? "" : ", partitioned by " + partitioning.period().name().toLowerCase())
                + (progress == Progress.ROW_STATE ? "" : ", progress " + progress.name().toLowerCase().replace('_', '-'))
                + ")";
    }

    public static final class Builder {
        private String schema = DEFAULT_SCHEMA;
        private String outboxTable = DEFAULT_OUTBOX_TABLE;
        private int shards = DEFAULT_SHARDS;
        private OutboxPartitioning.Period partitionPeriod;
        private Integer partitionAhead;
        private Progress progress = Progress.ROW_STATE;

        private Builder() {
        }

        public Builder schema(String schema) {
            this.schema = schema;
            return this;
        }

        public Builder outboxTable(String outboxTable) {
            this.outboxTable = outboxTable;
            return this;
        }

        public Builder shards(int shards) {
            this.shards = shards;
            return this;
        }

        /** How the relay records a published event (default {@link Progress#ROW_STATE}). */
        public Builder progress(Progress progress) {
            this.progress = progress;
            return this;
        }

        /**
         * A time-partitioned outbox table ({@link OutboxPartitioning#daily()}, {@code weekly()}, {@code monthly()});
         * {@code null} for a plain one (the default). Event ids must then be UUIDv7 (the default when not given).
         */
        public Builder partitioned(OutboxPartitioning partitioning) {
            this.partitionPeriod = partitioning == null ? null : partitioning.period();
            this.partitionAhead = partitioning == null ? null : partitioning.ahead();
            return this;
        }

        /**
         * Applies settings by their names in {@link OutboxSchema#DESCRIPTOR} ({@code "outbox-table"} or
         * {@code "txoutbox.schema.outbox-table"}), each value its text form or typed; an unknown name or an
         * unreadable value fails and changes nothing.
         */
        public Builder settings(Map<String, ?> settings) {
            return DESCRIPTOR.apply(this, settings);
        }

        public OutboxSchema build() {
            return new OutboxSchema(schema, outboxTable, shards, partitioning(), progress);
        }

        private OutboxPartitioning partitioning() {
            if (partitionPeriod == null) {
                if (partitionAhead != null) {
                    throw Checks.invalid("schema.partitioning.ahead", "is set (" + partitionAhead + ") but "
                            + "schema.partitioning.period is not: set the period too, or neither");
                }
                return null;
            }
            OutboxPartitioning byPeriod = switch (partitionPeriod) {
                case DAY -> OutboxPartitioning.daily();
                case WEEK -> OutboxPartitioning.weekly();
                case MONTH -> OutboxPartitioning.monthly();
            };
            return partitionAhead == null ? byPeriod : byPeriod.ahead(partitionAhead);
        }
    }
}
