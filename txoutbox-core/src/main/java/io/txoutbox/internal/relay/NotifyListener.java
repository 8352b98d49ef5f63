package io.txoutbox.internal.relay;

import io.txoutbox.RelayConfig;
import io.txoutbox.internal.pg.RelayStatements;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Optional wake-up by PostgreSQL {@code LISTEN}: a connection of its own waits for the outbox channel's
 * notifications (sent at commit by writers with {@code notifyOnPublish}) and nudges the lanes. Needs pgjdbc.
 */
final class NotifyListener implements Runnable, AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(NotifyListener.class);

    private final RelayConfig config;
    private final DataSource dataSource;
    private final Runnable onNotify;
    private final RelayStatements statements;
    private final Thread thread;
    private volatile boolean stopping;

    NotifyListener(RelayConfig config, DataSource dataSource, RelayStatements statements, Runnable onNotify) {
        this.config = config;
        this.dataSource = dataSource;
        this.onNotify = onNotify;
        this.statements = statements;
        this.thread = new Thread(this, "txoutbox-relay-" + config.name() + "-listen");
        this.thread.setDaemon(true);
    }

    void start() {
        thread.start();
    }

    @Override
    public void run() {
        long backoff = 100;
        while (!stopping) {
            try (Connection c = dataSource.getConnection()) {
                c.setAutoCommit(true);
                try (Statement st = c.createStatement()) {
                    st.execute(statements.listen());
                }
                org.postgresql.PGConnection pg = c.unwrap(org.postgresql.PGConnection.class);
                log.info("txoutbox-relay {}: listening on {}", config.name(), config.schema().notifyChannel());
                backoff = 100;
                while (!stopping) {
                    org.postgresql.PGNotification[] got = pg.getNotifications(500);
                    if (got != null && got.length > 0) {
                        onNotify.run();
                    }
                }
                try (Statement st = c.createStatement()) {
                    st.execute(RelayStatements.UNLISTEN_ALL);
                }
            } catch (SQLException | RuntimeException e) {
                if (stopping) {
                    return;
                }
                log.warn("txoutbox-relay {}: LISTEN connection failed, retrying in {} ms: {}", config.name(),
                        backoff, e.toString());
                try {
                    Thread.sleep(backoff);
                } catch (InterruptedException ie) {
                    Thread.currentThread().interrupt();
                    return;
                }
                backoff = Math.min(5_000, backoff * 2);
            }
        }
    }

    @Override
    public void close() {
        stopping = true;
        try {
            thread.join(2_000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
