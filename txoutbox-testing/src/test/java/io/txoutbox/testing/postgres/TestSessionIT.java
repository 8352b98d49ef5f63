package io.txoutbox.testing.postgres;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;

/**
 * A test's kept session: its reads all run on one backend, from several threads at once, in the database's schema;
 * closing the database closes it.
 */
class TestSessionIT {

    @Test
    void reads_from_several_threads_share_one_backend_and_close_with_the_database() throws Exception {
        long backendPid;
        TestSession session;
        try (TestDatabase db = TestPostgres.shared().newDatabase("test_session")) {
            db.execute("CREATE TABLE t (n int)", "INSERT INTO t SELECT generate_series(1, 10)");
            session = db.session();
            backendPid = session.queryLong("SELECT pg_backend_pid()");
            ExecutorService pool = Executors.newFixedThreadPool(4);
            try {
                List<Future<List<Long>>> readers = new ArrayList<>();
                for (int r = 0; r < 4; r++) {
                    readers.add(pool.submit((Callable<List<Long>>) () -> {
                        List<Long> seen = new ArrayList<>();
                        for (int i = 0; i < 50; i++) {
                            seen.add(session.queryLong("SELECT pg_backend_pid() * 100 + count(*) FROM t"));
                        }
                        return seen;
                    }));
                }
                for (Future<List<Long>> reader : readers) {
                    assertThat(reader.get()).as("one backend, the schema's table").containsOnly(backendPid * 100 + 10);
                }
            } finally {
                pool.shutdownNow();
            }
            assertThat(session.queryLong("SELECT max(n) FROM t WHERE n > 99")).as("NULL reads as 0").isZero();
            assertThat(session.connection().isClosed()).isFalse();
        }
        assertThat(session.connection().isClosed()).as("closed with its database").isTrue();
    }
}
