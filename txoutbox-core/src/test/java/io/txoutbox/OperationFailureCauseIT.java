package io.txoutbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import io.txoutbox.testing.postgres.PostgresExtension;
import io.txoutbox.testing.postgres.TestDatabase;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.function.Consumer;
import javax.sql.DataSource;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * An operator call (admin, status) whose session dies in the middle of its work reports why the work failed, not
 * that the rollback after it could not run on the dead session: the rollback's own failure is only attached.
 */
class OperationFailureCauseIT {

    @RegisterExtension
    static final PostgresExtension postgres = new PostgresExtension();

    private TestDatabase db;
    private OutboxSchema schema;

    @BeforeEach
    void setUp() {
        db = postgres.database();
        schema = OutboxSchema.builder().schema(db.schema()).build();
        schema.migrate(db.dataSource());
    }

    @Test
    void outbox_admin_reports_the_failure_of_its_work_not_of_its_rollback() {
        assertReportsTheKilledSession(ds -> OutboxAdmin.create(ds, schema).list(EventFilter.dead(), 0, 10));
    }

    @Test
    void inbox_admin_reports_the_failure_of_its_work_not_of_its_rollback() {
        assertReportsTheKilledSession(ds -> InboxAdmin.create(ds, schema)
                .list(EventFilter.parked().consumer("orders"), 0, 10));
    }

    @Test
    void status_reports_the_failure_of_its_read_not_of_its_rollback() {
        assertReportsTheKilledSession(ds -> OutboxStatus.backlog(ds, schema));
    }

    private void assertReportsTheKilledSession(Consumer<DataSource> operation) {
        OutboxException e = catchThrowableOfType(OutboxException.class,
                () -> operation.accept(killedOnFirstStatement(db.dataSource())));
        assertThat(e).as("the operation fails").isNotNull();
        SQLException cause = (SQLException) e.getCause();
        // the statement on the killed session: an I/O error (08006) or the server's own notice (57P01); the
        // rollback afterwards can only say that the connection is closed (08003)
        assertThat(cause.getSQLState()).as("cause %s", cause).isIn("08006", "57P01");
        assertThat(e.getMessage()).doesNotContain("has been closed");
    }

    /**
     * Hands out sessions that are terminated by the server just before their first statement is prepared: the
     * operation's own work fails, in its transaction.
     */
    private DataSource killedOnFirstStatement(DataSource real) {
        InvocationHandler source = (proxy, method, args) -> {
            if (method.getName().equals("getConnection")) {
                Connection c = (Connection) invoke(real, method, args);
                return killing(c);
            }
            return invoke(real, method, args);
        };
        return (DataSource) Proxy.newProxyInstance(getClass().getClassLoader(), new Class<?>[] {DataSource.class},
                source);
    }

    private Connection killing(Connection c) throws SQLException {
        long pid;
        try (var st = c.createStatement(); var rs = st.executeQuery("SELECT pg_backend_pid()")) {
            rs.next();
            pid = rs.getLong(1);
        }
        boolean[] killed = {false};
        InvocationHandler h = (proxy, method, args) -> {
            if (!killed[0] && (method.getName().equals("prepareStatement") || method.getName().equals("createStatement"))) {
                killed[0] = true;
                db.execute("SELECT pg_terminate_backend(" + pid + ")");
                long alive = 1;
                for (int i = 0; i < 200 && alive > 0; i++) {
                    alive = db.queryLong("SELECT count(*) FROM pg_stat_activity WHERE pid = " + pid);
                    if (alive > 0) {
                        Thread.sleep(10);
                    }
                }
            }
            return invoke(c, method, args);
        };
        return (Connection) Proxy.newProxyInstance(getClass().getClassLoader(), new Class<?>[] {Connection.class}, h);
    }

    private static Object invoke(Object target, java.lang.reflect.Method method, Object[] args) throws Throwable {
        try {
            return method.invoke(target, args);
        } catch (InvocationTargetException e) {
            throw e.getCause();
        }
    }
}
