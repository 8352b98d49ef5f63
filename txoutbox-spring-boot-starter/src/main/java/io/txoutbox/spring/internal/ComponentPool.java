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
     * How long a thread of the component waits for a connection of its pool before it fails and retries (a lane
     * retries after its error backoff): never as long as Hikari's default 30 s, and the failure names the pool's state.
     */
    static final long CONNECTION_TIMEOUT_MS = 5_000;

    /**
     * The relay's pool: a session per lane it may own, one for its membership heartbeat, one for its {@code LISTEN}
     * when it listens, and one for its short calls (start checks, the missing-privilege report).
     */
    public static int relaySize(int lanesItMayOwn, boolean listens) {
        return lanesItMayOwn + 2 + (listens ? 1 : 0);
    }

    /**
     * A fixed-size pool of {@code size} connections named {@code name}, to the database at {@code url}. Fixed, as
     * Hikari recommends: the lanes hold their sessions for the component's life, and a pool that opens connections
     * only on demand ({@code minimumIdle} below the size) decides whether to open one for a waiting thread from a
     * count of waiters and idle connections that a concurrent borrower can make stale; a lane that asks at the wrong
     * moment then waits for the whole connection timeout. A full pool has a connection for every lane from the start.
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
        pool.setMinimumIdle(size);
        pool.setConnectionTimeout(CONNECTION_TIMEOUT_MS);
        pool.setInitializationFailTimeout(-1); // a database that is not up yet does not fail the application's start
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
