package io.txoutbox.testing.history;

import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Locale;
import java.util.UUID;
import javax.sql.DataSource;
import org.postgresql.ds.PGSimpleDataSource;

/** A fresh, randomly named schema on the machine's PostgreSQL (or {@code TXOUTBOX_TEST_PG_URL}), dropped on close. */
final class TestDatabase implements AutoCloseable {

    private static final String URL = System.getenv().getOrDefault("TXOUTBOX_TEST_PG_URL",
            "jdbc:postgresql://127.0.0.1:5432/test?user=postgres");

    final DataSource dataSource;
    final String schema;

    TestDatabase(String prefix) throws SQLException {
        PGSimpleDataSource ds = new PGSimpleDataSource();
        ds.setURL(URL);
        this.dataSource = ds;
        this.schema = prefix + "_" + UUID.randomUUID().toString().replace("-", "").substring(0, 12)
                .toLowerCase(Locale.ROOT);
        execute("CREATE SCHEMA " + schema);
    }

    void execute(String sql) throws SQLException {
        try (Connection connection = dataSource.getConnection(); Statement statement = connection.createStatement()) {
            statement.execute(sql);
        }
    }

    @Override
    public void close() throws SQLException {
        execute("DROP SCHEMA IF EXISTS " + schema + " CASCADE");
    }
}
