package io.txoutbox.test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.txoutbox.EventFilter;
import io.txoutbox.FailurePolicy;
import io.txoutbox.Inbox;
import io.txoutbox.InboxAdmin;
import io.txoutbox.InboxMessage;
import io.txoutbox.InboxWorker;
import io.txoutbox.Outbox;
import io.txoutbox.OutboxAdmin;
import io.txoutbox.OutboxException;
import io.txoutbox.OutboxGrants;
import io.txoutbox.OutboxGrants.Component;
import io.txoutbox.OutboxHealth;
import io.txoutbox.OutboxMessage;
import io.txoutbox.OutboxPartitioning;
import io.txoutbox.OutboxReplay;
import io.txoutbox.OutboxRetention;
import io.txoutbox.OutboxSchema;
import io.txoutbox.OutboxStatus;
import io.txoutbox.PollingRelay;
import io.txoutbox.RetryPolicy;
import io.txoutbox.spi.OutboxRecord;
import io.txoutbox.spi.SendResult;
import io.txoutbox.testing.postgres.PostgresExtension;
import io.txoutbox.testing.postgres.TestDatabase;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import javax.sql.DataSource;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Every component logged in as a role that holds exactly the grants {@link OutboxGrants} gives it (those docs/operations.md lists), and
 * nothing more: the schema is migrated by a role that may only create schemas in the database, and EXECUTE on
 * txoutbox's functions is revoked from PUBLIC so that the function grants are needed too.
 */
@Tag("pg-version")
class LeastPrivilegeIT {

    @RegisterExtension
    static final PostgresExtension postgres = new PostgresExtension();

    private static final Duration WAIT = Duration.ofSeconds(60);

    private static TestDatabase db;
    private static OutboxSchema schema;
    private static String owner;
    private static DataSource ownerSessions;

    @BeforeAll
    static void migrateAsTheOwner() {
        db = postgres.database();
        schema = OutboxSchema.builder().schema(db.schema() + "_lp").outboxTable("lp_outbox").shards(8).build();
        ownerSessions = db.loginRole("owner", r -> {
            owner = r;
            return OutboxGrants.sql(schema, Component.MIGRATION_OWNER, r);
        });
        schema.migrate(ownerSessions);
        schema.migrate(ownerSessions); // again: finds every script applied
        run(ownerSessions, "REVOKE EXECUTE ON FUNCTION " + schema.schema() + ".txoutbox_shard(text, integer) FROM"
                + " PUBLIC", "REVOKE EXECUTE ON FUNCTION " + schema.schema() + ".txoutbox_uuidv7() FROM PUBLIC");
    }

    private static DataSource role(Component... components) {
        return db.loginRole(components[0].name().toLowerCase(), r -> {
            List<String> sql = new ArrayList<>();
            for (Component c : components) {
                sql.addAll(OutboxGrants.sql(schema, c, r));
            }
            return sql;
        });
    }

    private static void run(DataSource ds, String... sql) {
        try (Connection c = ds.getConnection(); Statement st = c.createStatement()) {
            for (String s : sql) {
                st.execute(s);
            }
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    private static long count(String where) {
        return db.queryLong("SELECT count(*) FROM " + schema.qualifiedOutboxTable() + " WHERE " + where);
    }

    private static List<UUID> publish(DataSource writer, String topic, int n, String keyPrefix) throws Exception {
        Outbox outbox = Outbox.builder().schema(schema).build();
        List<UUID> ids = new ArrayList<>();
        try (Connection c = writer.getConnection()) {
            c.setAutoCommit(false);
            for (int i = 0; i < n; i += 100) {
                List<OutboxMessage> batch = new ArrayList<>();
                for (int j = i; j < Math.min(n, i + 100); j++) {
                    batch.add(OutboxMessage.builder().topic(topic).aggregate("Order", keyPrefix + (j % 37))
                            .eventType("E").jsonPayload("{\"n\":" + j + "}").build());
                }
                ids.addAll(outbox.publish(c, batch.toArray(new OutboxMessage[0])));
            }
            c.commit();
        }
        return ids;
    }

    @Test
    void the_owner_created_and_owns_the_schema_and_its_tables() {
        assertThat(db.queryLong("SELECT count(*) FROM pg_tables WHERE schemaname = '" + schema.schema()
                + "' AND tableowner = '" + owner + "'")).isGreaterThanOrEqualTo(5);
        assertThat(db.queryLong("SELECT count(*) FROM pg_tables WHERE schemaname = '" + schema.schema()
                + "' AND tableowner <> '" + owner + "'")).isZero();
    }

    @Test
    void writer_relay_and_admin_roles_deliver_1000_events_end_to_end() throws Exception {
        DataSource writer = role(Component.WRITER);
        DataSource relaySessions = role(Component.RELAY);
        DataSource admin = role(Component.ADMIN);
        InMemoryTransport transport = new InMemoryTransport();
        List<UUID> ids = publish(writer, "e2e", 1_000, "e2e-");
        // a writer in another language: plain SQL, no event id (the UUIDv7 default), the shard computed
        run(writer, "INSERT INTO " + schema.qualifiedOutboxTable() + " (topic, partition_key, aggregate_type,"
                + " aggregate_id, event_type, payload) VALUES ('e2e', 'sql-1', 'Order', 'sql-1', 'E', '{}')");
        try (PollingRelay relay = PollingRelay.builder().dataSource(relaySessions).schema(schema)
                .transport(transport).lanes(2).batchSize(200).pollInterval(Duration.ofMillis(20)).build().start()) {
            transport.awaitDelivered(r -> r.topic().equals("e2e"), 1_001, WAIT);
            assertThat(transport.delivered("e2e").stream().map(OutboxRecord::eventId).distinct())
                    .hasSize(1_001).containsAll(ids);
            await().atMost(WAIT).until(() -> OutboxStatus.pendingCount(admin, schema) == 0);
            assertThat(OutboxStatus.lanes(admin, schema)).hasSize(2)
                    .allSatisfy(l -> assertThat(l.instanceId()).isEqualTo(relay.instanceId()));
            assertThat(relay.stats().loopErrors()).isZero();
        }
        assertThatThrownBy(() -> run(writer, "SELECT 1 FROM " + schema.qualifiedOutboxTable()))
                .as("the writer really is restricted").hasMessageContaining("permission denied");
        assertThatThrownBy(() -> run(relaySessions, "DELETE FROM " + schema.qualifiedOutboxTable()))
                .as("the relay really is restricted").hasMessageContaining("permission denied");
        assertThatThrownBy(() -> run(relaySessions, "UPDATE " + schema.qualifiedOutboxTable() + " SET payload = '{}'"))
                .as("the relay updates only its columns").hasMessageContaining("permission denied");
    }

    @Test
    void the_admin_role_lists_requeues_and_reads_status_and_health() throws Exception {
        DataSource writer = role(Component.WRITER);
        DataSource relaySessions = role(Component.RELAY);
        DataSource admin = role(Component.ADMIN);
        InMemoryTransport transport = new InMemoryTransport();
        List<UUID> ids = publish(writer, "adm", 20, "adm-");
        UUID poison = ids.get(0);
        transport.failWhen(r -> r.eventId().equals(poison), SendResult.Kind.PERMANENT, 1);
        try (PollingRelay relay = PollingRelay.builder().dataSource(relaySessions).schema(schema)
                .transport(transport).lanes(1).pollInterval(Duration.ofMillis(20))
                .failurePolicy(FailurePolicy.PARK_KEY).build().start()) {
            OutboxAdmin a = OutboxAdmin.create(admin, schema);
            await().atMost(WAIT).until(() -> a.list(EventFilter.parked(), 0, 10).size() == 1);
            assertThat(a.list(EventFilter.parked(), 0, 10).get(0).eventId()).isEqualTo(poison);
            assertThat(OutboxStatus.snapshot(admin, schema).backlog().parkedKeys()).isEqualTo(1);
            assertThat(OutboxHealth.builder().dataSource(admin).schema(schema).relay(relay).build().check()
                    .backlog()).isNotNull();
            assertThat(a.requeue(poison, "ops")).isTrue();
            transport.awaitDelivered(poison, WAIT);
            await().atMost(WAIT).until(() -> OutboxStatus.pendingCount(admin, schema) == 0);
        }
        assertThat(count("event_id = '" + poison + "' AND state = 'PUBLISHED' AND operator_name = 'ops'"))
                .isEqualTo(1);
    }

    @Test
    void the_retention_role_deletes_old_published_rows_and_purges_the_inbox() throws Exception {
        DataSource writer = role(Component.WRITER);
        publish(writer, "ret", 300, "ret-");
        db.execute("UPDATE " + schema.qualifiedOutboxTable() + " SET state = 'PUBLISHED', published_at = now()"
                        + " - interval '2 days', created_at = now() - interval '2 days' WHERE topic = 'ret'",
                "INSERT INTO " + schema.schema() + ".processed_event (consumer, event_id, processed_at) SELECT 'ret',"
                        + " gen_random_uuid(), now() - interval '3 days' FROM generate_series(1, 50)");
        DataSource retention = role(Component.RETENTION, Component.INBOX_RETENTION);
        try (OutboxRetention job = OutboxRetention.builder().dataSource(retention).schema(schema)
                .retention(Duration.ofDays(1)).inboxRetention(Duration.ofDays(1), Duration.ofDays(1))
                .interval(Duration.ofHours(1)).build()) {
            job.start(); // its privilege check passes
            await().atMost(WAIT).until(() -> count("topic = 'ret'") == 0 && db.queryLong("SELECT count(*) FROM "
                    + schema.schema() + ".processed_event WHERE consumer = 'ret'") == 0);
            assertThat(job.stats().failedRuns()).isZero();
        }
    }

    @Test
    void the_replay_role_replays_a_range_to_another_topic() throws Exception {
        DataSource writer = role(Component.WRITER);
        List<UUID> ids = publish(writer, "rep", 50, "rep-");
        db.execute("UPDATE " + schema.qualifiedOutboxTable() + " SET state = 'PUBLISHED', published_at = now()"
                + " WHERE topic = 'rep'");
        InMemoryTransport transport = new InMemoryTransport();
        OutboxReplay.Result result = OutboxReplay.builder().dataSource(role(Component.REPLAY)).schema(schema)
                .transport(transport).name("lp").topic("rep").toTopic("rep-again").build().run();
        assertThat(result.done()).isTrue();
        assertThat(result.replayed()).isEqualTo(50);
        assertThat(transport.delivered("rep-again")).extracting(OutboxRecord::eventId).containsExactlyElementsOf(ids);
    }

    @Test
    void receiver_worker_and_inbox_admin_roles_store_process_and_retry_inbox_events() throws Exception {
        DataSource receiver = role(Component.INBOX_RECEIVER);
        Inbox inbox = Inbox.create(schema);
        List<InboxMessage> messages = new ArrayList<>();
        for (int i = 0; i < 200; i++) {
            messages.add(InboxMessage.builder(UUID.randomUUID()).key("k" + (i % 10)).eventType("Seq")
                    .payload(("p" + i).getBytes(StandardCharsets.UTF_8)).source("t", 0, (long) i).build());
        }
        try (Connection c = receiver.getConnection()) {
            c.setAutoCommit(false);
            assertThat(inbox.receive(c, "lp", messages)).isEqualTo(200);
            assertThat(inbox.receive(c, "lp", messages.subList(0, 10))).as("duplicates dropped").isZero();
            c.commit();
        }
        UUID poison = messages.get(0).eventId();
        Set<UUID> handled = ConcurrentHashMap.newKeySet();
        try (InboxWorker worker = InboxWorker.builder().dataSource(role(Component.INBOX_WORKER)).schema(schema)
                .consumer("lp").lanes(2).pollInterval(Duration.ofMillis(20))
                .retry(RetryPolicy.defaults().withMaxAttempts(1)).failurePolicy(FailurePolicy.PARK_KEY)
                .handler("Seq", (c, e) -> {
                    if (e.eventId().equals(poison) && !handled.contains(poison)) {
                        handled.add(poison);
                        throw new IllegalStateException("refused once");
                    }
                    handled.add(e.eventId());
                }).build().start()) {
            InboxAdmin admin = InboxAdmin.create(role(Component.ADMIN), schema);
            await().atMost(WAIT).until(() -> admin.list(EventFilter.parked().consumer("lp"), 0, 10).size() == 1);
            assertThat(admin.list(EventFilter.parked().consumer("lp"), 0, 10).get(0).failedAt())
                    .as("set by the worker's role").isNotNull();
            assertThat(admin.requeue("lp", poison, "ops")).isTrue();
            worker.nudge();
            await().atMost(WAIT).until(() -> admin.pendingCount("lp") == 0
                    && admin.list(EventFilter.parked().consumer("lp"), 0, 10).isEmpty());
            assertThat(admin.show("lp", poison, false).orElseThrow()).satisfies(e -> {
                assertThat(e.state()).isEqualTo("PROCESSED");
                assertThat(e.operatorAction()).isEqualTo("REQUEUED");
                assertThat(e.operatorName()).isEqualTo("ops");
                assertThat(e.completedAt()).isNotNull();
            });
            assertThat(worker.stats().loopErrors()).isZero();
        }
        assertThat(handled).hasSize(200);
    }

    @Test
    void the_dedupe_role_applies_once_and_refuses_stale_versions() throws Exception {
        DataSource dedupe = role(Component.DEDUPE);
        Inbox inbox = Inbox.create(schema);
        UUID first = UUID.randomUUID();
        List<Inbox.Outcome> outcomes = new ArrayList<>();
        try (Connection c = dedupe.getConnection()) {
            c.setAutoCommit(false);
            outcomes.add(inbox.once(c, "lp", first, Inbox.version("Order", "1", 2), x -> { }));
            outcomes.add(inbox.once(c, "lp", first, Inbox.version("Order", "1", 2), x -> { }));
            outcomes.add(inbox.once(c, "lp", UUID.randomUUID(), Inbox.version("Order", "1", 1), x -> { }));
            outcomes.add(inbox.once(c, "lp", UUID.randomUUID(), Inbox.version("Order", "1", 3), x -> { }));
            c.commit();
        }
        assertThat(outcomes).containsExactly(Inbox.Outcome.APPLIED, Inbox.Outcome.DUPLICATE,
                Inbox.Outcome.STALE_VERSION, Inbox.Outcome.APPLIED);
    }

    @Test
    void a_partitioned_outbox_is_maintained_by_a_login_role_that_acts_as_the_owner() throws Exception {
        OutboxSchema parts = OutboxSchema.builder().schema(schema.schema()).outboxTable("lp_parts").shards(8)
                .partitioned(OutboxPartitioning.daily()).build();
        parts.migrate(ownerSessions);
        // a member that only logs in and then acts as the owner: the partitions it creates belong to the owner too
        DataSource member = db.loginRole("partret", r -> List.of("GRANT \"" + owner + "\" TO \"" + r + "\""),
                Map.of("role", owner));
        OutboxRetention.Result result = OutboxRetention.builder().dataSource(member).schema(parts)
                .retention(Duration.ofDays(1)).clock(java.time.Clock.offset(java.time.Clock.systemUTC(),
                        Duration.ofDays(10))).build().runOnce();
        assertThat(result.partitions().created()).isNotEmpty();
        assertThat(result.partitions().dropped()).isNotEmpty();
        assertThat(db.queryLong("SELECT count(*) FROM pg_tables WHERE schemaname = '" + schema.schema()
                + "' AND tablename LIKE 'lp_parts%' AND tableowner <> '" + owner + "'")).isZero();
    }

    @Test
    void a_worker_or_retention_role_missing_a_grant_fails_at_start_naming_it() {
        DataSource noUpdate = db.loginRole("worker_short", r -> {
            List<String> sql = new ArrayList<>(OutboxGrants.sql(schema, Component.INBOX_WORKER, r));
            sql.removeIf(s -> s.startsWith("GRANT UPDATE"));
            return sql;
        });
        InboxWorker worker = InboxWorker.builder().dataSource(noUpdate).schema(schema).consumer("lp-short")
                .defaultHandler((c, e) -> { }).build();
        assertThatThrownBy(worker::start).isInstanceOf(OutboxException.class)
                .hasMessageContaining("GRANT UPDATE (state, processed_at, next_attempt_at, attempts, last_error,"
                        + " failed_at) ON"
                        + " TABLE \"" + schema.schema() + "\".inbox_event");
        worker.close();
        DataSource noSequence = db.loginRole("retention_short", r -> {
            List<String> sql = new ArrayList<>(OutboxGrants.sql(schema, Component.RETENTION, r));
            sql.removeIf(s -> s.contains("SEQUENCE"));
            return sql;
        });
        OutboxRetention job = OutboxRetention.builder().dataSource(noSequence).schema(schema)
                .retention(Duration.ofDays(1)).build();
        assertThatThrownBy(job::start).isInstanceOf(OutboxException.class)
                .hasMessageContaining("GRANT SELECT ON SEQUENCE \"" + schema.schema() + "\".\"lp_outbox_id_seq\"");
        job.close();
    }

    @Test
    void a_call_refused_for_a_missing_privilege_says_which_grants_the_role_needs() {
        DataSource noInsert = db.loginRole("writer_short", r -> {
            List<String> sql = new ArrayList<>(OutboxGrants.sql(schema, Component.WRITER, r));
            sql.removeIf(s -> s.startsWith("GRANT INSERT"));
            return sql;
        });
        assertThatThrownBy(() -> publish(noInsert, "short", 1, "short-")).isInstanceOf(OutboxException.class)
                .hasMessageContaining("permission denied")
                .hasMessageContaining("grant it what OutboxGrants.sql(schema, WRITER, role) lists");
        DataSource noAdmin = db.loginRole("admin_short", r -> List.of("GRANT USAGE ON SCHEMA " + schema.schema()
                + " TO " + r));
        assertThatThrownBy(() -> OutboxAdmin.create(noAdmin, schema).list(EventFilter.dead(), 0, 10))
                .hasMessageContaining("grant it what OutboxGrants.sql(schema, ADMIN, role) lists");
        assertThatThrownBy(() -> InboxAdmin.create(noAdmin, schema).discard("lp", UUID.randomUUID(), "ops"))
                .hasMessageContaining("grant it what OutboxGrants.sql(schema, ADMIN, role) lists");
        assertThatThrownBy(() -> OutboxStatus.pendingCount(noAdmin, schema))
                .hasMessageContaining("grant it what OutboxGrants.sql(schema, ADMIN, role) lists");
    }

    @Test
    void the_grants_of_each_role_are_what_the_operations_guide_lists() throws Exception {
        String guide = java.nio.file.Files.readString(java.nio.file.Path.of("..", "docs", "operations.md"));
        OutboxSchema defaults = OutboxSchema.defaults();
        StringBuilder expected = new StringBuilder();
        for (Component c : Component.values()) {
            expected.append("-- ").append(c).append('\n');
            for (String s : OutboxGrants.sql(defaults, c, "app_" + c.name().toLowerCase())) {
                expected.append(s).append(";\n");
            }
        }
        assertThat(guide).contains(expected.toString());
    }
}
