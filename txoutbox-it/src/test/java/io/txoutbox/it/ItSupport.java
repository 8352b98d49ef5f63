package io.txoutbox.it;

import io.txoutbox.Outbox;
import io.txoutbox.OutboxMessage;
import io.txoutbox.OutboxPartitioning;
import io.txoutbox.OutboxSchema;
import io.txoutbox.internal.progress.ProgressModels;
import io.txoutbox.testing.history.Delivery;
import io.txoutbox.testing.history.HistoryChecker;
import io.txoutbox.testing.history.HistoryReport;
import io.txoutbox.testing.history.Ledger;
import io.txoutbox.testing.history.LedgerEntry;
import io.txoutbox.testing.history.LedgerWriter;
import io.txoutbox.testing.history.Verifier;
import io.txoutbox.testing.postgres.TestDatabase;
import io.txoutbox.testing.postgres.TestPostgres;
import io.txoutbox.testing.process.JvmProcess;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.common.TopicPartition;

/** Shared pieces of the end-to-end tests: ledger writers that publish through the outbox, and the final check. */
final class ItSupport {

    private ItSupport() {
    }

    /** A ledger writer whose events go into the outbox (topic {@code topic}, key = ledger key). */
    static LedgerWriter.Builder ledgerWriter(TestDatabase db, Outbox outbox, String topic) {
        return LedgerWriter.builder(db.dataSource(), db.schema())
                .eventInserter((c, eventId, key, seq) -> outbox.publish(c, OutboxMessage.builder().eventId(eventId)
                        .topic(topic).aggregate("Key", key).eventType("Seq").aggregateVersion(seq)
                        .jsonPayload("{\"key\":\"" + key + "\",\"seq\":" + seq + "}").build()));
    }

    /**
     * A relay process ({@link RelayProcessMain}) on {@code schema}'s outbox in {@code db}, on the schema's progress
     * model and partitioning, sending to {@code bootstrap} with {@code lanes} lanes of {@code batch} rows.
     */
    static JvmProcess.Builder relayProcess(TestDatabase db, OutboxSchema schema, String bootstrap, int lanes,
            int batch) {
        TestPostgres pg = db.server();
        JvmProcess.Builder relay = JvmProcess.builder(RelayProcessMain.class).name("relay").jvmArgs("-Xmx256m")
                .systemProperty(RelayProcessMain.PROGRESS, schema.progress().name())
                .args(pg.jdbcUrl(), pg.user(), pg.password(), db.schema(), bootstrap, Integer.toString(lanes),
                        Integer.toString(batch));
        if (schema.partitioning() != null) {
            relay.systemProperty(RelayProcessMain.PARTITIONING, schema.partitioning().period().name());
        }
        return relay;
    }

    /** Reads the topic to its end and checks it against what the ledger says committed. */
    static HistoryReport check(TestDatabase db, String bootstrap, String topic, Duration deadline) {
        return check(db, topic, deliveries(db, bootstrap, topic, deadline));
    }

    /** Everything the topic holds, read to its end once every event the ledger says committed is there. */
    static List<Delivery> deliveries(TestDatabase db, String bootstrap, String topic, Duration deadline) {
        return Verifier.builder(bootstrap, topic).expectedEvents(Ledger.read(db.dataSource(), db.schema()).size())
                .deadline(deadline).build().readAll();
    }

    /** Checks what {@code topic} delivered against what the ledger says committed. */
    static HistoryReport check(TestDatabase db, String topic, List<Delivery> deliveries) {
        List<LedgerEntry> ledger = Ledger.read(db.dataSource(), db.schema());
        HistoryReport report = HistoryChecker.check(ledger, deliveries);
        org.slf4j.LoggerFactory.getLogger(ItSupport.class).info("history of {}: {}", topic, report.summaryLine());
        return report;
    }

    static OutboxSchema schema(TestDatabase db) {
        return schema(db, OutboxSchema.Progress.ROW_STATE);
    }

    /** The default outbox table in the database's schema, on {@code progress}, migrated. */
    static OutboxSchema schema(TestDatabase db, OutboxSchema.Progress progress) {
        return schema(db, progress, null);
    }

    /**
     * The default outbox table in the database's schema, on {@code progress}, partitioned by {@code period} (3
     * periods ahead, as {@link RelayProcessMain} builds it; {@code null}: a plain table), migrated.
     */
    static OutboxSchema schema(TestDatabase db, OutboxSchema.Progress progress, OutboxPartitioning.Period period) {
        OutboxSchema schema = OutboxSchema.builder().schema(db.schema()).progress(progress)
                .partitioned(period == null ? null : new OutboxPartitioning(period, 3)).build();
        schema.migrate(db.dataSource());
        return schema;
    }

    /**
     * The rows of {@code schema}'s table that are pending as its progress model says: row state, {@code PENDING};
     * cursor, also a fresh row above its shard's cursor (delivered or not: the lane has not recorded it yet).
     */
    static String pending(OutboxSchema schema) {
        return ProgressModels.of(schema).pending(null);
    }

    /** The end offset of each partition of {@code topic} now (uncommitted records included), by partition. */
    static Map<Integer, Long> endOffsets(String bootstrap, String topic) {
        try (Admin admin = Admin.create(Map.of("bootstrap.servers", bootstrap))) {
            Map<TopicPartition, OffsetSpec> latest = new HashMap<>();
            admin.describeTopics(List.of(topic)).allTopicNames().get(30, TimeUnit.SECONDS).get(topic).partitions()
                    .forEach(p -> latest.put(new TopicPartition(topic, p.partition()), OffsetSpec.latest()));
            Map<Integer, Long> ends = new HashMap<>();
            admin.listOffsets(latest).all().get(30, TimeUnit.SECONDS)
                    .forEach((tp, info) -> ends.put(tp.partition(), info.offset()));
            return ends;
        } catch (Exception e) {
            throw new IllegalStateException("could not read the end offsets of " + topic, e);
        }
    }
}
