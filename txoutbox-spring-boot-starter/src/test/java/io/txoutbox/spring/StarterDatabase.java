package io.txoutbox.spring;

import io.txoutbox.testing.postgres.TestDatabase;
import io.txoutbox.testing.postgres.TestPostgres;
import org.springframework.test.context.DynamicPropertyRegistry;

/** A schema of the tests' PostgreSQL for one application context, and the properties that point the context at it. */
final class StarterDatabase {

    private StarterDatabase() {
    }

    /** A new schema; kept until the server stops, so a cached context never outlives its tables. */
    static TestDatabase create(String hint) {
        return TestPostgres.shared().newDatabase(hint);
    }

    static void register(DynamicPropertyRegistry registry, TestDatabase db) {
        registry.add("spring.datasource.url", db::jdbcUrl);
        registry.add("spring.datasource.username", () -> db.server().user());
        registry.add("spring.datasource.password", () -> db.server().password());
        registry.add("txoutbox.schema.schema", db::schema);
    }

    /** The same as a map, for an ApplicationContextRunner. */
    static String[] properties(TestDatabase db) {
        return new String[] {"spring.datasource.url=" + db.jdbcUrl(),
                "spring.datasource.username=" + db.server().user(),
                "spring.datasource.password=" + (db.server().password() == null ? "" : db.server().password()),
                "txoutbox.schema.schema=" + db.schema()};
    }
}
