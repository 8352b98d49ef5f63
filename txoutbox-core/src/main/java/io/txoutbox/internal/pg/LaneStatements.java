package io.txoutbox.internal.pg;

/**
 * The SQL of a lane's session that the relay and the inbox worker share: the session's settings and their reset
 * ({@code SessionLease}), the lane-count check after a lane's lock ({@code LaneLock}) and the proof that the lane's
 * statements run on the backend that holds its lock ({@code BackendCheck}). The lock statements themselves are
 * {@link AdvisoryLocks}'.
 */
public final class LaneStatements {

    /**
     * A lane session's settings, as {@code SET} makes them (not local to a transaction): the lease's timeouts and TCP
     * keepalives, custom plans, the application name. Binds, as text: {@code statement_timeout}, {@code lock_timeout},
     * {@code idle_in_transaction_session_timeout}, {@code idle_session_timeout} (ms), {@code tcp_keepalives_idle}
     * (s), {@code tcp_user_timeout} (ms), {@code application_name}.
     */
    public static final String SESSION_SETTINGS = """
            SELECT set_config('statement_timeout', ?, false), set_config('lock_timeout', ?, false), \
            set_config('idle_in_transaction_session_timeout', ?, false), \
            set_config('idle_session_timeout', ?, false), set_config('tcp_keepalives_idle', ?, false), \
            set_config('tcp_keepalives_interval', '1', false), set_config('tcp_keepalives_count', '3', false), \
            set_config('tcp_user_timeout', ?, false), set_config('client_connection_check_interval', '1000', false), \
            set_config('plan_cache_mode', 'force_custom_plan', false), set_config('application_name', ?, false)""";

    /** PostgreSQL 17+: the session's {@code transaction_timeout}, as {@code SET} makes it. Binds: ms, as text. */
    public static final String TRANSACTION_TIMEOUT = "SELECT set_config('transaction_timeout', ?, false)";

    /** A lane's heartbeat: a statement at least every third of the lease keeps its session (and its lock). */
    public static final String HEARTBEAT = "SELECT 1";

    /** The server's version as a number ({@code 170004}). */
    public static final String SERVER_VERSION_NUM = "SHOW server_version_num";

    /** Reset before the session goes back to a pool: its advisory locks released. */
    public static final String UNLOCK_ALL = "SELECT pg_advisory_unlock_all()";

    /** Reset before the session goes back to a pool: every setting back to its default. */
    public static final String RESET_ALL = "RESET ALL";

    /**
     * The lane counts other sessions work with (their shared "lane count" locks, one-bigint keys {@code high << 32 |
     * kind << 16 | lanes}). Binds: the keys' high half (as {@code pg_locks.classid}, unsigned), the lane-count kind.
     */
    public static final String OTHER_LANE_COUNTS = """
            SELECT DISTINCT (objid::bigint & 65535)::int FROM pg_locks WHERE locktype = 'advisory' \
            AND objsubid = 1 AND granted AND classid::bigint = ? \
            AND (objid::bigint >> 16) = ? AND pid <> pg_backend_pid()""";

    /**
     * Backend check at acquisition, one statement: this backend's pid; the definition of the setting named by the
     * prefix, the pid and the token (= {@code on}); the pids that hold the lane's lock in this database. Binds: the
     * setting's prefix ({@code txoutbox.lane_<component>_}), the token, the key's high half (classid), its low half
     * (objid).
     */
    public static final String BACKEND_ACQUIRED = """
            SELECT pg_backend_pid(), set_config(? || pg_backend_pid() || '_' || ?, 'on', false), \
            (SELECT string_agg(l.pid::text, ',' ORDER BY l.pid) FROM pg_locks l \
            WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1 AND l.classid::bigint = ? \
            AND l.objid::bigint = ? AND l.database = (SELECT oid FROM pg_database \
            WHERE datname = current_database()))""";

    /** Backend check at acquisition, the second statement: this backend's pid and the setting. Binds: its name. */
    public static final String BACKEND_SETTING_READ = "SELECT pg_backend_pid(), current_setting(?, true)";

    private LaneStatements() {
    }

    /**
     * The condition the backend check appends to a marking statement: true on the session that defined {@code
     * setting}; on any other session {@code current_setting} fails (42704), and on the owning session after a reset
     * it reads {@code lostSetting}, which no session defines, and fails the same way. The names are the check's own
     * ({@code [a-z_0-9.]}), spelled as literals: a bind would shift the statement's parameters.
     */
    public static String backendGuard(String setting, String lostSetting) {
        return " AND " + backendCondition(setting, lostSetting);
    }

    /** The condition of {@link #backendGuard} alone, for a WHERE that is not the statement's last clause. */
    public static String backendCondition(String setting, String lostSetting) {
        return "(CASE WHEN current_setting('" + setting + "') = 'on' THEN true"
                + " ELSE current_setting('" + lostSetting + "') IS NULL END)";
    }
}
