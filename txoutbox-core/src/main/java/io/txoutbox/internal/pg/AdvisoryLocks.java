package io.txoutbox.internal.pg;

import io.txoutbox.OutboxSchema;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.zip.CRC32;

/**
 * Every advisory lock key txoutbox takes, in one place, with the statements that take and release them.
 *
 * <p>Two forms, which PostgreSQL keeps apart ({@code pg_locks.objsubid} 1 and 2, so a key of one form never meets
 * a key of the other):
 * <ul>
 *   <li><b>one bigint</b> (objsubid 1): the lanes of the relay and of the inbox worker, and replay. The high half is
 *       the CRC32 of a name that is unique per use (the outbox table, the consumer's inbox, the literal "repl");
 *       the low half holds a kind and a value. Relay and inbox high halves are CRCs of different strings
 *       ({@code schema.table} and {@code schema.inbox_event.consumer}); two of them can be equal only by a CRC
 *       collision, which {@code AdvisoryLockKeysTest} checks for the default names.</li>
 *   <li><b>two ints</b> (objsubid 2): one-off jobs; the first int is a namespace constant (four ASCII letters), the
 *       second a hash of the object.</li>
 * </ul>
 * The numbers are part of the wire contract between versions: old and new relays in a rolling deploy exclude each
 * other only while they compute the same keys ({@code AdvisoryLockKeysTest} holds the golden values).
 */
public final class AdvisoryLocks {

    /** Kinds in the low half of a lane key: {@code kind << 16 | value}. */
    public static final int KIND_LANE = 1;
    public static final int KIND_LANE_COUNT = 2;
    /** The relay member key: {@code 3 << 28 | lanes << 14 | cap}. */
    public static final int KIND_MEMBER = 3;
    /** The inbox worker's kinds: its keys live under the consumer's CRC, apart from the relay's. */
    public static final int KIND_INBOX_LANE = 3;
    public static final int KIND_INBOX_LANE_COUNT = 4;

    static final int NS_MIGRATION = 0x74786F62; // "txob"
    static final int NS_MIGRATION_STEPS = 0x74786F73; // "txos"
    static final int NS_RETENTION = 0x74787274; // "txrt"
    static final int NS_INBOX_BACKFILL = 0x74786266; // "txbf"
    static final int NS_PARTITION_CONVERSION = 0x74787063; // "txpc"
    static final long REPLAY_HIGH = 0x7265706CL; // "repl"

    private AdvisoryLocks() {
    }

    /** One advisory lock key, in either form. */
    public record Key(boolean pair, long single, int first, int second) {

        static Key of(long key) {
            return new Key(false, key, 0, 0);
        }

        static Key of(int first, int second) {
            return new Key(true, 0, first, second);
        }

        /** {@code pg_try_advisory_lock}: true when this session holds the lock now. */
        public boolean tryLock(Connection c) throws SQLException {
            return call(c, "pg_try_advisory_lock");
        }

        /** {@code pg_advisory_lock}: waits (within the session's {@code lock_timeout}) for the lock. */
        public void lock(Connection c) throws SQLException {
            call(c, "pg_advisory_lock");
        }

        /** {@code pg_advisory_lock_shared}. */
        public void lockShared(Connection c) throws SQLException {
            call(c, "pg_advisory_lock_shared");
        }

        /** {@code pg_advisory_xact_lock}: held until the transaction ends. */
        public void lockForTransaction(Connection c) throws SQLException {
            call(c, "pg_advisory_xact_lock");
        }

        /** {@code pg_advisory_unlock}; false when this session did not hold it. */
        public boolean unlock(Connection c) throws SQLException {
            return call(c, "pg_advisory_unlock");
        }

        /** {@link #unlock}, for a session that may be gone (which released its locks already). */
        public void unlockQuietly(Connection c) {
            try {
                unlock(c);
            } catch (SQLException e) {
                // a broken session has released its locks already
            }
        }

        /** The {@code pg_locks} condition that finds this key ({@code classid, objid, objsubid}). */
        public String pgLocksCondition() {
            long classid = pair ? Integer.toUnsignedLong(first) : single >>> 32;
            long objid = pair ? Integer.toUnsignedLong(second) : single & 0xFFFFFFFFL;
            return "locktype = 'advisory' AND classid::bigint = " + classid + " AND objid::bigint = " + objid
                    + " AND objsubid = " + (pair ? 2 : 1);
        }

        /** Runs {@code SELECT function(key)}: the boolean it returns, true for a void function. */
        private boolean call(Connection c, String function) throws SQLException {
            boolean returnsBoolean = function.startsWith("pg_try_") || function.endsWith("unlock");
            String sql = "SELECT " + function + (pair ? "(?, ?)" : "(?)");
            try (PreparedStatement ps = c.prepareStatement(sql)) {
                if (pair) {
                    ps.setInt(1, first);
                    ps.setInt(2, second);
                } else {
                    ps.setLong(1, single);
                }
                try (ResultSet rs = ps.executeQuery()) {
                    rs.next();
                    return !returnsBoolean || rs.getBoolean(1);
                }
            }
        }
    }

    // ---- the relay: one-bigint keys under the outbox table's CRC ----

    /** The high half of the relay's keys: the CRC32 of {@code schema.outbox_table}. */
    public static int relayTableHash(OutboxSchema schema) {
        return crc(schema.schema() + "." + schema.outboxTable());
    }

    /** The relay lane {@code index}. */
    public static Key relayLane(OutboxSchema schema, int index) {
        return Key.of(laneKey(relayTableHash(schema), KIND_LANE, index));
    }

    /** The relay's shared "lane count" lock: instances with another lane count are refused. */
    public static Key relayLaneCount(OutboxSchema schema, int lanes) {
        return Key.of(laneKey(relayTableHash(schema), KIND_LANE_COUNT, lanes));
    }

    /** The member lock of a live relay instance with its lane count and cap in the key. */
    public static Key relayMember(OutboxSchema schema, int lanes, int cap) {
        return Key.of(((long) relayTableHash(schema) << 32) | ((long) KIND_MEMBER << 28) | ((long) lanes << 14)
                | cap);
    }

    // ---- the inbox worker: one-bigint keys under the consumer's CRC ----

    /** The high half of an inbox consumer's keys: the CRC32 of {@code schema.inbox_event.consumer}. */
    public static int inboxConsumerHash(String schemaName, String consumer) {
        return crc(schemaName + ".inbox_event." + consumer);
    }

    public static Key inboxLane(int consumerHash, int index) {
        return Key.of(laneKey(consumerHash, KIND_INBOX_LANE, index));
    }

    public static Key inboxLaneCount(int consumerHash, int lanes) {
        return Key.of(laneKey(consumerHash, KIND_INBOX_LANE_COUNT, lanes));
    }

    // ---- replay: one-bigint key, "repl" in the high half ----

    /** A replay run, by its checkpoint table and its name. */
    public static Key replay(String checkpointTable, String name) {
        return Key.of(REPLAY_HIGH << 32 | Integer.toUnsignedLong(crc(checkpointTable + "/" + name)));
    }

    // ---- one-off jobs: two-int keys under a namespace ----

    /** Migration of one schema (transaction lock). */
    public static Key migration(String schemaName) {
        return Key.of(NS_MIGRATION, schemaName.hashCode());
    }

    /** The online migration steps (index builds, check validation) of one outbox table. */
    public static Key migrationSteps(OutboxSchema schema) {
        return Key.of(NS_MIGRATION_STEPS, (schema.schema() + "." + schema.outboxTable()).hashCode());
    }

    /** One table's retention run. */
    public static Key retention(OutboxSchema schema) {
        return Key.of(NS_RETENTION, crc(schema.schema() + "." + schema.outboxTable()));
    }

    /** The inbox's key-bytes backfill. */
    public static Key inboxBackfill(String schemaName) {
        return Key.of(NS_INBOX_BACKFILL, (schemaName + ".inbox_event.key_bytes").hashCode());
    }

    /** The conversion of {@code table} to a partitioned table. */
    public static Key partitionConversion(String schemaName, String table) {
        return Key.of(NS_PARTITION_CONVERSION, (schemaName + "." + table).hashCode());
    }

    private static long laneKey(int high, int kind, int value) {
        return ((long) high << 32) | ((long) kind << 16) | (value & 0xFFFF);
    }

    private static int crc(String s) {
        CRC32 crc = new CRC32();
        crc.update(s.getBytes(StandardCharsets.UTF_8));
        return (int) crc.getValue();
    }
}
