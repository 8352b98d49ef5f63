package io.txoutbox.test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.txoutbox.Outbox;
import io.txoutbox.OutboxMessage;
import io.txoutbox.OutboxSchema;
import io.txoutbox.PollingRelay;
import io.txoutbox.spi.RelayListener;
import io.txoutbox.spi.SendResult;
import io.txoutbox.testing.postgres.PostgresExtension;
import io.txoutbox.testing.postgres.TestDatabase;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@code relay.transactionTimeout} bounds a relay transaction as a whole on PostgreSQL 17+ ({@code
 * transaction_timeout}); earlier versions bound only each statement ({@code statement_timeout}) and each idle gap
 * ({@code idle_in_transaction_session_timeout}). The mark transaction is made to run two statements that each wait
 * for a row lock the test holds, each for less than the statement timeout, together for longer than the transaction
 * timeout.
 */
@Tag("pg-version")
class RelayTransactionTimeoutIT {

    private static final Logger log = LoggerFactory.getLogger(RelayTransactionTimeoutIT.class);

    @RegisterExtension
    static final PostgresExtension postgres = new PostgresExtension();

    private static final Duration TRANSACTION_TIMEOUT = Duration.ofSeconds(2);

    @Test
    void a_relay_transaction_busy_past_the_transaction_timeout_is_ended_by_the_server_on_17_and_later()
            throws Exception {
        TestDatabase db = postgres.database();
        OutboxSchema schema = OutboxSchema.builder().schema(db.schema()).outboxTable("rtt").shards(1).build();
        schema.migrate(db.dataSource());
        int version = (int) db.queryLong("SELECT current_setting('server_version_num')::int");
        Outbox outbox = Outbox.builder().schema(schema).build();
        List<UUID> ids;
        try (Connection c = db.connect()) {
            c.setAutoCommit(false);
            ids = outbox.publish(c, message("a"), message("b"));
            c.commit();
        }
        UUID delivered = ids.get(0);
        UUID failing = ids.get(1);
        InMemoryTransport transport = new InMemoryTransport();
        transport.failWhen(r -> r.eventId().equals(failing), SendResult.Kind.RETRIABLE, 1);
        Set<String> failureStates = ConcurrentHashMap.newKeySet();
        AtomicLong longestTransactionMs = new AtomicLong();
        try (Connection lockA = db.connect(); Connection lockB = db.connect()) {
            lockA.setAutoCommit(false);
            lockB.setAutoCommit(false);
            lock(lockA, schema, delivered);
            lock(lockB, schema, failing);
            try (PollingRelay relay = PollingRelay.builder().dataSource(db.dataSource()).schema(schema)
                    .transport(transport).name("rtt").lanes(1).pollInterval(Duration.ofMillis(20))
                    .statementTimeout(TRANSACTION_TIMEOUT).transactionTimeout(TRANSACTION_TIMEOUT)
                    .lockTimeout(Duration.ofSeconds(30)).listener(new RelayListener() {
                        @Override
                        public void loopFailed(Throwable error) {
                            for (Throwable t = error; t != null; t = t.getCause()) {
                                if (t instanceof SQLException s && s.getSQLState() != null) {
                                    failureStates.add(s.getSQLState());
                                }
                            }
                        }
                    }).build().start()) {
                // the mark of "a" waits for lockA; release it after 1.2 s of the transaction: the failure record of
                // "b" then waits for lockB, within its own statement timeout of 2 s
                await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(20))
                        .until(() -> relayTransactionMs(db, longestTransactionMs) >= 1_200);
                lockA.commit();
                await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(20))
                        .until(() -> relayTransactionMs(db, longestTransactionMs) >= 2_600
                                || failureStates.contains("25P04"));
                lockB.commit();
                transport.awaitDelivered(failing, Duration.ofSeconds(30));
                transport.awaitDelivered(delivered, Duration.ofSeconds(30));
            }
        }
        log.info("server_version_num {}: longest relay transaction seen {} ms (transaction timeout {} ms), failure"
                + " states {}", version, longestTransactionMs.get(), TRANSACTION_TIMEOUT.toMillis(), failureStates);
        if (version >= 170_000) {
            assertThat(failureStates).as("the server ended the transaction (transaction_timeout)").contains("25P04");
            assertThat(longestTransactionMs.get()).isLessThan(2_600);
        } else {
            assertThat(failureStates).as("no transaction_timeout before PostgreSQL 17").doesNotContain("25P04");
            assertThat(longestTransactionMs.get()).as("only the statements are bounded").isGreaterThanOrEqualTo(2_600);
        }
    }

    private static OutboxMessage message(String key) {
        return OutboxMessage.builder().topic("t").aggregate("A", key).eventType("E").jsonPayload("{}").build();
    }

    private static void lock(Connection c, OutboxSchema schema, UUID eventId) throws SQLException {
        try (var ps = c.prepareStatement("SELECT 1 FROM " + schema.qualifiedOutboxTable()
                + " WHERE event_id = ? FOR UPDATE")) {
            ps.setObject(1, eventId);
            ps.executeQuery().close();
        }
    }

    /** How long the relay lane's current transaction has run (0: none), remembering the longest seen. */
    private static long relayTransactionMs(TestDatabase db, AtomicLong longest) {
        long ms = db.queryLong("SELECT coalesce(max((extract(epoch FROM clock_timestamp() - xact_start) * 1000)"
                + "::bigint), 0) FROM pg_stat_activity WHERE application_name LIKE 'txoutbox-relay rtt-0 %'");
        longest.accumulateAndGet(ms, Math::max);
        return ms;
    }
}
