package io.txoutbox.spring.internal;

import com.zaxxer.hikari.HikariDataSource;
import io.txoutbox.InvalidConfigurationException;
import javax.sql.DataSource;
import org.springframework.boot.jdbc.autoconfigure.JdbcConnectionDetails;

/**
 * The small pool of a component that holds sessions for its lanes (the relay, the inbox worker): its own
 * connections, never ones held for ever out of the application's pool. Built from the connection the application's
 * {@code DataSource} is configured with.
 */
public final class ComponentPool {

    private ComponentPool() {
    }

    /**
     * A pool of {@code size} connections named {@code name}, to the database at {@code url}; the lanes keep their
     * sessions, so the pool never needs more than lanes + 2.
     */
    public static HikariDataSource create(String name, String url, String user, String password, String driver,
            int size) {
        if (url == null || url.isBlank()) {
            throw new InvalidConfigurationException("txoutbox needs the JDBC URL of the application's database for the "
                    + "relay's own pool: set spring.datasource.url, or define a DataSource bean named "
                    + "'txoutboxRelayDataSource' (setting spring.datasource.url)");
        }
        HikariDataSource pool = new HikariDataSource();
        pool.setPoolName(name);
        pool.setJdbcUrl(url);
        pool.setUsername(user);
        pool.setPassword(password);
        if (driver != null) {
            pool.setDriverClassName(driver);
        }
        pool.setMaximumPoolSize(size);
        pool.setMinimumIdle(0);
        pool.setIdleTimeout(60_000);
        pool.setInitializationFailTimeout(-1);
        return pool;
    }

    /**
     * A pool named {@code name} of {@code size} connections to the database of {@code connection} (Spring Boot's
     * {@code spring.datasource.*} or a service connection), else to that of the application's Hikari pool.
     */
    public static HikariDataSource of(String name, JdbcConnectionDetails connection, DataSource application,
            int size) {
        return connection != null
                ? create(name, connection.getJdbcUrl(), connection.getUsername(), connection.getPassword(),
                        connection.getDriverClassName(), size)
                : like(name, application, size);
    }

    /** Builds the component on {@code pool}; the pool is closed if that fails (else the component's lifecycle owns it). */
    public static <T> T build(HikariDataSource pool, java.util.function.Function<HikariDataSource, T> component) {
        try {
            return component.apply(pool);
        } catch (RuntimeException e) {
            pool.close();
            throw e;
        }
    }

    /** The URL, user and password of a Hikari pool (the application's, when it has no JdbcConnectionDetails). */
    public static HikariDataSource like(String name, DataSource dataSource, int size) {
        if (dataSource instanceof HikariDataSource h) {
            return create(name, h.getJdbcUrl(), h.getUsername(), h.getPassword(), h.getDriverClassName(), size);
        }
        throw new InvalidConfigurationException("txoutbox cannot tell how to connect for the relay's own pool from a "
                + dataSource.getClass().getName() + ": set spring.datasource.url (and username, password), or define "
                + "a DataSource bean named 'txoutboxRelayDataSource' (setting spring.datasource.url)");
    }
}
