package io.txoutbox.test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;
import static org.assertj.core.api.Assertions.fail;
import static org.awaitility.Awaitility.await;

import io.txoutbox.Outbox;
import io.txoutbox.OutboxException;
import io.txoutbox.OutboxHealth;
import io.txoutbox.OutboxMessage;
import io.txoutbox.OutboxSchema;
import io.txoutbox.PollingRelay;
import io.txoutbox.spi.RelayListener;
import io.txoutbox.testing.postgres.PostgresExtension;
import io.txoutbox.testing.postgres.TestDatabase;
import java.sql.Connection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A relay whose role lacks a privilege: it must say which GRANT to add and stop, never loop. Reproduces the report of
 * issue 10: with {@code SELECT, UPDATE} on the table (the grants the README gave before issue 10) the relay published nothing and
 * looped on "permission denied for sequence".
 */
@Tag("pg-version")
class RelayPrivilegesIT {

    @RegisterExtension
    static final PostgresExtension postgres = new PostgresExtension();

    private TestDatabase db;
    private OutboxSchema schema;
    private InMemoryTransport transport;
    private final List<PollingRelay> relays = new ArrayList<>();
    private final AtomicInteger loopFailures = new AtomicInteger();
    private final AtomicReference<Throwable> lastLoopFailure = new AtomicReference<>();

    @BeforeEach
    void setUp(TestInfo info) {
        db = postgres.database();
        schema = OutboxSchema.builder().schema(db.schema())
                .outboxTable("priv_" + Math.abs(info.getTestMethod().orElseThrow().getName().hashCode() % 10_000))
                .shards(8).build();
        schema.migrate(db.dataSource());
        transport = new InMemoryTransport();
    }

    @AfterEach
    void tearDown() {
        relays.forEach(PollingRelay::close);
    }

    private String sequence() {
        return db.schema() + "." + schema.outboxTable() + "_id_seq";
    }

    /** The statement the relay must name, identifiers quoted as it quotes them. */
    private String sequenceGrant(String role) {
        return "GRANT SELECT ON SEQUENCE \"" + db.schema() + "\".\"" + schema.outboxTable() + "_id_seq\" TO \"" + role
                + "\"";
    }

    private PollingRelay relay(DataSource ds) {
        PollingRelay r = PollingRelay.builder().dataSource(ds).schema(schema).transport(transport).lanes(2)
                .pollInterval(Duration.ofMillis(20)).listener(new RelayListener() {
                    @Override
                    public void loopFailed(Throwable error) {
                        loopFailures.incrementAndGet();
                        lastLoopFailure.set(error);
                    }
                }).build();
        relays.add(r);
        return r;
    }

    private void write(int n) throws Exception {
        Outbox outbox = Outbox.builder().schema(schema).build();
        try (Connection c = db.connect()) {
            c.setAutoCommit(false);
            for (int i = 0; i < n; i++) {
                outbox.publish(c, OutboxMessage.builder().topic("orders").aggregate("Order", "k" + (i % 50))
                        .eventType("E").jsonPayload("{}").build());
            }
            c.commit();
        }
    }

    @Test
    void a_relay_role_with_only_select_and_update_on_the_table_fails_at_start_naming_the_missing_grant()
            throws Exception {
        write(1_000);
        String[] role = new String[1];
        DataSource ds = db.loginRole("relay", r -> {
            role[0] = r;
            return List.of("GRANT USAGE ON SCHEMA " + db.schema() + " TO " + r,
                    "GRANT SELECT, UPDATE ON " + schema.qualifiedOutboxTable() + " TO " + r);
        });
        PollingRelay relay = relay(ds);
        Throwable thrown = catchThrowable(relay::start);
        if (thrown == null) {
            await().atMost(Duration.ofSeconds(20)).until(() -> loopFailures.get() >= 5);
            fail("the relay started and loops: published " + transport.delivered().size() + " of 1000, "
                    + loopFailures.get() + " loop errors, the last: " + lastLoopFailure.get());
        }
        assertThat(thrown).isInstanceOf(OutboxException.class)
                .hasMessageContaining(sequenceGrant(role[0]));
        assertThat(transport.delivered()).isEmpty();
    }

    @Test
    void a_privilege_revoked_while_the_relay_runs_stops_it_once_with_the_grant_to_add() throws Exception {
        String[] role = new String[1];
        DataSource ds = db.loginRole("relay", r -> {
            role[0] = r;
            return List.of("GRANT USAGE ON SCHEMA " + db.schema() + " TO " + r,
                    "GRANT SELECT, UPDATE ON " + schema.qualifiedOutboxTable() + " TO " + r,
                    "GRANT SELECT ON SEQUENCE " + sequence() + " TO " + r,
                    "GRANT SELECT ON " + db.schema() + "." + schema.outboxTable() + "_installation TO " + r,
                    "GRANT SELECT, INSERT, UPDATE ON " + db.schema() + "." + schema.outboxTable() + "_progress TO " + r);
        });
        PollingRelay relay = relay(ds).start();
        write(100);
        transport.awaitDelivered(r -> true, 100, Duration.ofSeconds(30));
        db.execute("REVOKE SELECT ON SEQUENCE " + sequence() + " FROM " + role[0]);
        write(100);
        // the lanes stop instead of reconnecting and failing again every cycle
        await().atMost(Duration.ofSeconds(20)).until(() -> loopFailures.get() >= 1);
        await().atMost(Duration.ofSeconds(20)).until(() -> relay.stats().lanesOwned() == 0);
        await().during(Duration.ofSeconds(2)).atMost(Duration.ofSeconds(5))
                .until(() -> relay.stats().lanesOwned() == 0 && loopFailures.get() <= 2);
        assertThat(lastLoopFailure.get()).hasMessageContaining(sequenceGrant(role[0]));
        assertThat(relay.failure()).get().extracting(Throwable::getMessage).asString()
                .contains(sequenceGrant(role[0]));
        OutboxHealth.Result health = OutboxHealth.builder().dataSource(db.dataSource()).schema(schema).relay(relay)
                .build().check();
        assertThat(health.up()).isFalse();
        assertThat(health.reasons()).anySatisfy(r -> assertThat(r).contains(sequenceGrant(role[0])));
    }
}
