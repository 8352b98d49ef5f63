package io.txoutbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.txoutbox.testing.postgres.PostgresExtension;
import io.txoutbox.testing.postgres.TestDatabase;
import java.io.PrintWriter;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import java.sql.Statement;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.logging.Logger;
import javax.sql.DataSource;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import org.junit.jupiter.api.extension.RegisterExtension;

/** Retention by id ranges against a real PostgreSQL; rows' states are written with SQL (no relay here). */
class OutboxRetentionIT {

    @RegisterExtension
    static final PostgresExtension postgres = new PostgresExtension();

    private TestDatabase db;
    private OutboxSchema schema;
    private String t;
    private Instant dbNow;

    @BeforeEach
    void setUp(TestInfo info) {
        db = postgres.database();
        schema = OutboxSchema.builder().schema(db.schema())
                .outboxTable("ret_" + Math.abs(info.getTestMethod().orElseThrow().getName().hashCode())).build();
        schema.migrate(db.dataSource());
        t = schema.qualifiedOutboxTable();
        dbNow = Instant.ofEpochMilli(db.queryLong("SELECT (extract(epoch FROM now()) * 1000)::bigint"));
    }

    /** Rows with the given state, created and published the given intervals ago. */
    private void insert(int n, String stateSql, String createdAgo, String publishedAgo) {
        db.execute("INSERT INTO " + t + " (topic, partition_key, aggregate_type, aggregate_id, event_type, state,"
                + " created_at, published_at) SELECT 'orders', 'k-' || g, 'Order', g::text, 'E', " + stateSql
                + ", now() - interval '" + createdAgo + "', "
                + (publishedAgo == null ? "NULL" : "now() - interval '" + publishedAgo + "'")
                + " FROM generate_series(1, " + n + ") g");
    }

    private long count(String where) {
        return db.queryLong("SELECT count(*) FROM " + t + " WHERE " + where);
    }

    private OutboxRetention.Builder retention() {
        return OutboxRetention.builder().dataSource(db.dataSource()).schema(schema).retention(Duration.ofDays(1))
                .clock(Clock.fixed(dbNow, ZoneOffset.UTC)).pauseBetweenBatches(Duration.ZERO);
    }

    @Test
    void deletes_exactly_the_old_published_rows_in_batches_of_at_most_batch_size() {
        // an emptied head of the table (as a previous run leaves it): the walk must get past it
        insert(3_000, "'PUBLISHED'", "3 days", "3 days");
        db.execute("DELETE FROM " + t);
        // old rows in every state, interleaved; the non-published ones even carry an old published_at
        insert(2_000, "(ARRAY['PUBLISHED','PUBLISHED','PUBLISHED','PUBLISHED','PUBLISHED','PUBLISHED','PENDING',"
                + "'PARKED','DEAD','DISCARDED'])[g % 10 + 1]", "2 days 1 minute", "2 days");
        // published within the retention
        insert(50, "'PUBLISHED'", "2 minutes", "1 minute");
        long keptBefore = count("NOT (state = 'PUBLISHED' AND published_at < now() - interval '1 day')");

        OutboxRetention.Result r = retention().batchSize(100).build().runOnce();

        assertThat(r.deleted()).isEqualTo(1_200);
        assertThat(r.cutoff()).isEqualTo(dbNow.minus(Duration.ofDays(1)));
        assertThat(r.largestBatch()).isLessThanOrEqualTo(100);
        assertThat(r.batches()).isGreaterThanOrEqualTo(20);
        assertThat(r.failedBatches()).isZero();
        assertThat(count("state = 'PUBLISHED' AND published_at < now() - interval '1 day'")).isZero();
        assertThat(count("true")).isEqualTo(keptBefore);
        for (String state : new String[] {"PENDING", "PARKED", "DEAD", "DISCARDED"}) {
            assertThat(count("state = '" + state + "'")).as(state).isEqualTo(200);
        }
        assertThat(count("state = 'PUBLISHED'")).isEqualTo(50);
        // nothing left to do
        assertThat(retention().batchSize(100).build().runOnce().deleted()).isZero();
    }

    @Test
    void a_run_first_summarizes_the_brin_index_so_batches_read_only_their_pages() {
        String index = schema.outboxTable() + "_id";
        assertThat(db.queryLong("SELECT count(*) FROM pg_class WHERE relname = '" + index + "'"
                + " AND 'autosummarize=on' = ANY(reloptions)")).isEqualTo(1);
        // nobody else summarizes in this test: no autovacuum, no autosummarize
        db.execute("ALTER TABLE " + t + " SET (autovacuum_enabled = false)",
                "ALTER INDEX " + db.schema() + "." + index + " SET (autosummarize = off)");
        insert(20_000, "'PUBLISHED'", "3 days", "2 days");
        db.execute("SELECT brin_desummarize_range('" + index + "'::regclass, 0)");
        retention().build().deleteOlderThan(dbNow.minus(Duration.ofDays(30)));   // deletes nothing, summarizes
        assertThat(db.queryLong("SELECT brin_summarize_new_values('" + index + "'::regclass)")).isZero();
    }

    @Test
    void an_earlier_cutoff_keeps_rows_published_after_it() {
        insert(300, "'PUBLISHED'", "10 days", "5 days");
        insert(200, "'PUBLISHED'", "10 days", "9 days");
        OutboxRetention retention = retention().batchSize(64).build();
        assertThat(retention.deleteOlderThan(dbNow.minus(Duration.ofDays(7))).deleted()).isEqualTo(200);
        assertThat(count("true")).isEqualTo(300);
        assertThat(retention.runOnce().deleted()).isEqualTo(300);
        assertThat(count("true")).isZero();
    }

    @Test
    void an_empty_table_is_a_no_op() {
        OutboxRetention.Result r = retention().build().runOnce();
        assertThat(r.deleted()).isZero();
        assertThat(r.batches()).isZero();
    }

    @Test
    void a_range_whose_row_is_locked_is_left_for_the_next_run_and_the_rest_goes_on() throws Exception {
        insert(500, "'PUBLISHED'", "3 days", "2 days");
        OutboxRetention retention = retention().batchSize(50).lockTimeout(Duration.ofMillis(100)).build();
        try (Connection holder = db.connect()) {
            holder.setAutoCommit(false);
            try (Statement st = holder.createStatement()) {
                st.execute("SELECT 1 FROM " + t + " WHERE id = (SELECT min(id) + 249 FROM " + t + ") FOR UPDATE");
            }
            OutboxRetention.Result r = retention.runOnce();
            assertThat(r.failedBatches()).isEqualTo(1);
            assertThat(r.deleted()).isEqualTo(450);
            assertThat(count("true")).isEqualTo(50);
            holder.rollback();
        }
        assertThat(retention.runOnce().deleted()).isEqualTo(50);
        assertThat(count("true")).isZero();
    }

    @Test
    void the_background_job_survives_a_failing_run_and_goes_on() {
        insert(120, "'PUBLISHED'", "3 days", "2 days");
        AtomicInteger connections = new AtomicInteger();
        DataSource failingFirst = new DelegatingDataSource(db.dataSource()) {
            @Override
            public Connection getConnection() throws SQLException {
                // the first is the start's privilege check (it goes on without one), the second the first run's
                if (connections.incrementAndGet() <= 2) {
                    throw new SQLException("connection refused (test)", "08001");
                }
                return super.getConnection();
            }
        };
        OutboxRetention job = retention().dataSource(failingFirst).batchSize(50).interval(Duration.ofMillis(50))
                .build();
        try (job) {
            job.start();
            await().atMost(Duration.ofSeconds(20)).until(() -> count("true") == 0);
            assertThat(job.stats().failedRuns()).isGreaterThanOrEqualTo(1);
            assertThat(job.stats().deleted()).isEqualTo(120);
        }
        job.close(); // idempotent
        assertThatThrownBy(job::runOnce).hasMessageContaining("closed");
    }

    @Test
    void of_two_runs_on_one_table_one_works_and_the_other_skips() throws Exception {
        insert(100, "'PUBLISHED'", "3 days", "2 days");
        io.txoutbox.internal.pg.AdvisoryLocks.Key key = io.txoutbox.internal.pg.AdvisoryLocks.retention(schema);
        try (Connection other = db.connect(); Statement st = other.createStatement()) {
            st.execute("SELECT pg_advisory_lock(" + key.first() + ", " + key.second() + ")"); // another instance's run
            OutboxRetention.Result skipped = retention().build().runOnce();
            assertThat(skipped.anotherRunActive()).isTrue();
            assertThat(skipped.deleted()).isZero();
            assertThat(count("true")).isEqualTo(100);
        }
        // a pool keeps the session alive after close(): the run must release its lock itself
        try (Connection pooled = db.connect()) {
            Connection keptOpen = (Connection) java.lang.reflect.Proxy.newProxyInstance(
                    Connection.class.getClassLoader(), new Class<?>[] {Connection.class}, (proxy, method, args) ->
                            method.getName().equals("close") ? null : method.invoke(pooled, args));
            DataSource pool = new DelegatingDataSource(db.dataSource()) {
                @Override
                public Connection getConnection() {
                    return keptOpen;
                }
            };
            OutboxRetention.Result r = retention().dataSource(pool).build().runOnce();
            assertThat(r.anotherRunActive()).isFalse();
            assertThat(r.deleted()).isEqualTo(100);
            assertThat(db.queryLong("SELECT count(*) FROM pg_locks WHERE " + key.pgLocksCondition())).isZero();
        }
    }

    @Test
    void inbox_retention_runs_with_it_when_configured() {
        db.execute("INSERT INTO processed_event (consumer, event_id, processed_at) SELECT 'c', gen_random_uuid(),"
                + " now() - interval '2 days' FROM generate_series(1, 9)");
        OutboxRetention.Result r = retention().inboxRetention(Duration.ofDays(1), Duration.ofDays(1)).build()
                .runOnce();
        assertThat(r.inbox()).isNotNull();
        assertThat(r.inbox().processedEvents()).isEqualTo(9);
        assertThat(db.queryLong("SELECT count(*) FROM processed_event")).isZero();
    }

    /** A DataSource that forwards everything; tests override what they need. */
    private static class DelegatingDataSource implements DataSource {
        private final DataSource delegate;

        DelegatingDataSource(DataSource delegate) {
            this.delegate = delegate;
        }

        @Override
        public Connection getConnection() throws SQLException {
            return delegate.getConnection();
        }

        @Override
        public Connection getConnection(String user, String password) throws SQLException {
            return delegate.getConnection(user, password);
        }

        @Override
        public PrintWriter getLogWriter() throws SQLException {
            return delegate.getLogWriter();
        }

        @Override
        public void setLogWriter(PrintWriter out) throws SQLException {
            delegate.setLogWriter(out);
        }

        @Override
        public void setLoginTimeout(int seconds) throws SQLException {
            delegate.setLoginTimeout(seconds);
        }

        @Override
        public int getLoginTimeout() throws SQLException {
            return delegate.getLoginTimeout();
        }

        @Override
        public Logger getParentLogger() throws SQLFeatureNotSupportedException {
            return delegate.getParentLogger();
        }

        @Override
        public <T> T unwrap(Class<T> iface) throws SQLException {
            return delegate.unwrap(iface);
        }

        @Override
        public boolean isWrapperFor(Class<?> iface) throws SQLException {
            return delegate.isWrapperFor(iface);
        }
    }
}
