package io.txoutbox.test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.txoutbox.Outbox;
import io.txoutbox.OutboxMessage;
import io.txoutbox.OutboxSchema;
import io.txoutbox.PollingRelay;
import io.txoutbox.spi.OutboxRecord;
import io.txoutbox.testing.postgres.PostgresExtension;
import io.txoutbox.testing.postgres.TestDatabase;
import java.io.PrintWriter;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.logging.Logger;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The relay under a pool or database default of SERIALIZABLE (REPEATABLE READ behaves the same: one snapshot per
 * transaction). The claim floor reads the writers that hold the table and then claims in the same transaction; a
 * writer that commits between the transaction's snapshot and that lock read is neither a holder nor visible to the
 * claim. The race is forced: just before the floor's lock read the test's data source runs one statement on the
 * lane's connection (fixing the snapshot, as the lock read's own statement would under load) and commits the open
 * writer.
 */
@Tag("pg-version")
class ReadCommittedIT {

    @RegisterExtension
    static final PostgresExtension postgres = new PostgresExtension();

    private PollingRelay relay;

    @AfterEach
    void tearDown() {
        if (relay != null) {
            relay.close();
        }
    }

    @Test
    void under_a_serializable_default_the_claim_floor_never_passes_a_row_that_commits_during_its_check()
            throws Exception {
        TestDatabase db = postgres.database();
        OutboxSchema schema = OutboxSchema.builder().schema(db.schema()).outboxTable("rc_floor").shards(1).build();
        schema.migrate(db.dataSource());
        AtomicInteger lockReads = new AtomicInteger();
        AtomicReference<Connection> commitOnNextLockRead = new AtomicReference<>();
        DataSource serializable = db.dataSource(Map.of("default_transaction_isolation", "serializable"));
        DataSource racing = beforeFloorLockRead(serializable, () -> {
            lockReads.incrementAndGet();
            Connection writer = commitOnNextLockRead.get();
            if (writer != null) {
                writer.commit();
                commitOnNextLockRead.set(null);
            }
        });
        InMemoryTransport transport = new InMemoryTransport();
        relay = PollingRelay.builder().dataSource(racing).schema(schema).transport(transport).lanes(1)
                .pollInterval(Duration.ofMillis(20)).build().start();
        Outbox outbox = Outbox.builder().schema(schema).afterPublish(relay::nudge).build();
        await().atMost(Duration.ofSeconds(30)).until(() -> relay.stats().lanesOwned() == 1);

        try (Connection writer = db.connect()) {
            writer.setAutoCommit(false);
            outbox.publish(writer, event("first"));
            // within two checks the floor's candidate covers this row and names the writer as a holder
            int seen = lockReads.get();
            await().atMost(Duration.ofSeconds(10)).until(() -> lockReads.get() >= seen + 3);
            commitOnNextLockRead.set(writer);
            await().atMost(Duration.ofSeconds(10)).until(() -> commitOnNextLockRead.get() == null);
        }
        try (Connection c = db.connect()) {
            c.setAutoCommit(false);
            outbox.publish(c, event("second"));
            c.commit();
        }
        transport.awaitDelivered(r -> true, 2, Duration.ofSeconds(20));
        assertThat(transport.delivered()).extracting(OutboxRecord::eventType)
                .as("per-key order of key k: the first event was committed before the second was written")
                .containsExactly("first", "second");
    }

    private static OutboxMessage event(String type) {
        return OutboxMessage.builder().topic("orders").aggregate("Order", "k").eventType(type).jsonPayload("{}")
                .build();
    }

    interface SqlAction {
        void run() throws SQLException;
    }

    /**
     * A data source whose connections, just before the claim floor reads {@code pg_locks}, run {@code SELECT 1} in
     * the current transaction and then {@code action}.
     */
    static DataSource beforeFloorLockRead(DataSource ds, SqlAction action) {
        return new DataSource() {
            @Override
            public Connection getConnection() throws SQLException {
                return wrap(ds.getConnection(), action);
            }

            @Override
            public Connection getConnection(String user, String password) throws SQLException {
                return wrap(ds.getConnection(user, password), action);
            }

            @Override
            public PrintWriter getLogWriter() throws SQLException {
                return ds.getLogWriter();
            }

            @Override
            public void setLogWriter(PrintWriter out) throws SQLException {
                ds.setLogWriter(out);
            }

            @Override
            public void setLoginTimeout(int seconds) throws SQLException {
                ds.setLoginTimeout(seconds);
            }

            @Override
            public int getLoginTimeout() throws SQLException {
                return ds.getLoginTimeout();
            }

            @Override
            public Logger getParentLogger() {
                return Logger.getGlobal();
            }

            @Override
            public <T> T unwrap(Class<T> iface) throws SQLException {
                return ds.unwrap(iface);
            }

            @Override
            public boolean isWrapperFor(Class<?> iface) throws SQLException {
                return ds.isWrapperFor(iface);
            }
        };
    }

    private static Connection wrap(Connection c, SqlAction action) {
        return (Connection) Proxy.newProxyInstance(ReadCommittedIT.class.getClassLoader(),
                new Class<?>[] {Connection.class}, (proxy, method, args) -> {
                    Object result = invoke(c, method, args);
                    if (method.getName().equals("createStatement") && result instanceof Statement st) {
                        return wrap(c, st, action);
                    }
                    if (method.getName().equals("prepareStatement") && result instanceof PreparedStatement ps
                            && isFloorLockRead(args[0])) {
                        return wrap(c, ps, action);
                    }
                    return result;
                });
    }

    private static boolean isFloorLockRead(Object sql) {
        return sql instanceof String s && s.contains("pg_locks") && s.contains("RowExclusiveLock");
    }

    private static PreparedStatement wrap(Connection c, PreparedStatement ps, SqlAction action) {
        return (PreparedStatement) Proxy.newProxyInstance(ReadCommittedIT.class.getClassLoader(),
                new Class<?>[] {PreparedStatement.class}, (proxy, method, args) -> {
                    if (method.getName().equals("executeQuery") && args == null) {
                        try (Statement first = c.createStatement()) {
                            first.execute("SELECT 1");
                        }
                        action.run();
                    }
                    return invoke(ps, method, args);
                });
    }

    private static Statement wrap(Connection c, Statement st, SqlAction action) {
        return (Statement) Proxy.newProxyInstance(ReadCommittedIT.class.getClassLoader(),
                new Class<?>[] {Statement.class}, (proxy, method, args) -> {
                    if (method.getName().equals("executeQuery") && args != null && isFloorLockRead(args[0])) {
                        try (Statement first = c.createStatement()) {
                            first.execute("SELECT 1");
                        }
                        action.run();
                    }
                    return invoke(st, method, args);
                });
    }

    private static Object invoke(Object target, java.lang.reflect.Method method, Object[] args) throws Throwable {
        try {
            return method.invoke(target, args);
        } catch (InvocationTargetException e) {
            throw e.getCause();
        }
    }
}
