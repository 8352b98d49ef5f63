package io.txoutbox.test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;
import static org.awaitility.Awaitility.await;

import io.txoutbox.Outbox;
import io.txoutbox.OutboxException;
import io.txoutbox.OutboxMessage;
import io.txoutbox.OutboxPartitioning;
import io.txoutbox.OutboxSchema;
import io.txoutbox.testing.postgres.PostgresExtension;
import io.txoutbox.testing.postgres.TestDatabase;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Converting a plain outbox table into a time-partitioned one while writers go on: a conversion that fails or is
 * killed at any step must leave every INSERT the plain table accepted accepted, also with event ids past the bound
 * of the legacy partition.
 */
@Tag("pg-version")
class PartitionConversionIT {

    @RegisterExtension
    static final PostgresExtension postgres = new PostgresExtension();

    /** The application_name of the converting session, which the test's gate check recognises. */
    static final String CONVERTER = "conversion-under-test";
    static final int GATE_LOCK = 4242;

    private TestDatabase db;
    private String table;

    @BeforeEach
    void setUp(TestInfo info) {
        db = postgres.database();
        table = "pc_" + Math.abs(info.getTestMethod().orElseThrow().getName().hashCode());
    }

    private OutboxSchema.Builder schema() {
        return OutboxSchema.builder().schema(db.schema()).outboxTable(table).shards(8);
    }

    static UUID v7(Instant t) {
        ThreadLocalRandom r = ThreadLocalRandom.current();
        long msb = (t.toEpochMilli() << 16) | 0x7000L | r.nextInt(1 << 12);
        long lsb = (r.nextLong() & 0x3FFF_FFFF_FFFF_FFFFL) | 0x8000_0000_0000_0000L;
        return new UUID(msb, lsb);
    }

    static OutboxMessage event(String key, UUID eventId) {
        return OutboxMessage.builder().eventId(eventId).topic("orders").aggregate("Order", key).eventType("E")
                .jsonPayload("{}").build();
    }

    private void write(Outbox outbox, UUID id) throws SQLException {
        try (Connection c = db.connect()) {
            c.setAutoCommit(false);
            outbox.publish(c, event("k", id));
            c.commit();
        }
    }

    /**
     * A CHECK constraint of the user's, added NOT VALID (as a constraint validated online would be), whose validation
     * by the converting session waits while the test holds an advisory lock: the conversion can be held at that point
     * without any fault hook in the code under test. Writers' rows pass it at once.
     */
    private void addGateCheck(OutboxSchema s) {
        db.execute("CREATE OR REPLACE FUNCTION " + db.schema() + ".conversion_gate(x bigint) RETURNS boolean"
                + " LANGUAGE plpgsql AS $$ BEGIN IF current_setting('application_name') = '" + CONVERTER + "' THEN"
                + " PERFORM pg_advisory_xact_lock_shared(" + GATE_LOCK + "); END IF; RETURN true; END $$",
                "ALTER TABLE " + s.qualifiedOutboxTable() + " ADD CONSTRAINT " + table + "_gate CHECK ("
                        + db.schema() + ".conversion_gate(id)) NOT VALID");
    }

    private long converterWaitingAtGate() {
        return db.queryLong("SELECT count(*) FROM pg_stat_activity WHERE application_name = '" + CONVERTER
                + "' AND wait_event_type = 'Lock' AND wait_event = 'advisory'");
    }

    @Test
    void a_conversion_that_times_out_behind_a_long_writer_leaves_the_table_unchanged_and_accepts_ids_past_the_bound()
            throws Exception {
        OutboxSchema plain = schema().build();
        plain.migrate(db.dataSource());
        Outbox outbox = Outbox.builder().schema(plain).build();
        List<UUID> written = new ArrayList<>();
        for (int i = 0; i < 50; i++) {
            UUID id = v7(Instant.now());
            write(outbox, id);
            written.add(id);
        }
        addGateCheck(plain);
        OutboxSchema partitioned = schema().partitioned(OutboxPartitioning.daily()).build();

        Throwable failure;
        try (Connection gate = db.connect(); Connection converter = db.connect();
                Connection longWriter = db.connect()) {
            try (Statement st = gate.createStatement()) {
                st.execute("SELECT pg_advisory_lock(" + GATE_LOCK + ")");
            }
            try (Statement st = converter.createStatement()) {
                st.execute("SET application_name = '" + CONVERTER + "'");
            }
            CompletableFuture<Void> conversion = CompletableFuture.runAsync(() -> partitioned.migrate(converter));
            await().atMost(Duration.ofSeconds(30)).until(() -> converterWaitingAtGate() == 1);
            // a writer transaction that stays open through the rest of the conversion
            longWriter.setAutoCommit(false);
            UUID longOne = v7(Instant.now());
            outbox.publish(longWriter, event("long", longOne));
            try (Statement st = gate.createStatement()) {
                st.execute("SELECT pg_advisory_unlock(" + GATE_LOCK + ")");
            }
            failure = catchThrowable(() -> conversion.get(2, TimeUnit.MINUTES));
            longWriter.commit();
            written.add(longOne);
        }
        assertThat(failure).as("the conversion gave up behind the long writer").isNotNull();
        assertThat(failure.getCause()).isInstanceOf(OutboxException.class)
                .hasMessageContaining("the table is unchanged");

        // and every writer's INSERT the plain table accepted is still accepted, also past any bound of the conversion
        for (Duration ahead : List.of(Duration.ofHours(2), Duration.ofDays(2), Duration.ofDays(40))) {
            UUID id = v7(Instant.now().plus(ahead));
            write(outbox, id);
            written.add(id);
        }
        // unchanged: still the plain table, nothing of the conversion left on it
        assertThat(db.queryLong("SELECT count(*) FROM pg_class WHERE oid = '" + plain.qualifiedOutboxTable()
                + "'::regclass AND relkind = 'r'")).isOne();
        assertThat(db.queryLong("SELECT count(*) FROM pg_constraint WHERE conrelid = '" + plain.qualifiedOutboxTable()
                + "'::regclass AND conname LIKE '%legacy%'")).isZero();
        assertThat(db.queryLong("SELECT count(*) FROM " + plain.qualifiedOutboxTable())).isEqualTo(written.size());
    }
}
