package io.txoutbox.it;

import io.txoutbox.Outbox;
import io.txoutbox.OutboxMessage;
import io.txoutbox.OutboxSchema;
import io.txoutbox.testing.history.Delivery;
import io.txoutbox.testing.history.HistoryChecker;
import io.txoutbox.testing.history.HistoryReport;
import io.txoutbox.testing.history.Ledger;
import io.txoutbox.testing.history.LedgerEntry;
import io.txoutbox.testing.history.LedgerWriter;
import io.txoutbox.testing.history.Verifier;
import io.txoutbox.testing.postgres.TestDatabase;
import java.time.Duration;
import java.util.List;

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

    /** Reads the topic to its end and checks it against what the ledger says committed. */
    static HistoryReport check(TestDatabase db, String bootstrap, String topic, Duration deadline) {
        List<LedgerEntry> ledger = Ledger.read(db.dataSource(), db.schema());
        List<Delivery> deliveries = Verifier.builder(bootstrap, topic).expectedEvents(ledger.size())
                .deadline(deadline).build().readAll();
        HistoryReport report = HistoryChecker.check(ledger, deliveries);
        org.slf4j.LoggerFactory.getLogger(ItSupport.class).info("history of {}: {}", topic, report.summaryLine());
        return report;
    }

    static OutboxSchema schema(TestDatabase db) {
        OutboxSchema schema = OutboxSchema.builder().schema(db.schema()).build();
        schema.migrate(db.dataSource());
        return schema;
    }
}
