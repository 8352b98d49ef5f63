package io.txoutbox.testing.postgres;

import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.ParameterContext;
import org.junit.jupiter.api.extension.ParameterResolver;

/**
 * Gives a test class its own schema on a real PostgreSQL ({@link TestPostgres#shared()}):
 *
 * <pre>{@code
 * @RegisterExtension
 * static final PostgresExtension postgres = new PostgresExtension();
 * ... postgres.database().dataSource()
 * }</pre>
 *
 * or {@code @ExtendWith(PostgresExtension.class)} with a {@link TestDatabase} parameter on test methods or lifecycle
 * methods.
 */
public final class PostgresExtension implements BeforeAllCallback, AfterAllCallback, ParameterResolver {

    private static final ExtensionContext.Namespace NS = ExtensionContext.Namespace.create(PostgresExtension.class);

    private volatile TestDatabase database;

    @Override
    public void beforeAll(ExtensionContext context) {
        database = TestPostgres.shared().newDatabase(context.getRequiredTestClass().getSimpleName());
        context.getStore(NS).put("db", database);
    }

    @Override
    public void afterAll(ExtensionContext context) {
        TestDatabase db = database;
        if (db != null) {
            db.close();
        }
    }

    /** The class's database; available from {@code @BeforeAll} on. */
    public TestDatabase database() {
        if (database == null) {
            throw new IllegalStateException("PostgresExtension must be registered as a static field");
        }
        return database;
    }

    @Override
    public boolean supportsParameter(ParameterContext p, ExtensionContext e) {
        return p.getParameter().getType() == TestDatabase.class;
    }

    @Override
    public Object resolveParameter(ParameterContext p, ExtensionContext e) {
        TestDatabase db = e.getStore(NS).get("db", TestDatabase.class);
        return db != null ? db : database();
    }
}
