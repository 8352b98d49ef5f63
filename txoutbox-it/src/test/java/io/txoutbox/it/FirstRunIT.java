package io.txoutbox.it;

import static org.assertj.core.api.Assertions.assertThat;

import io.txoutbox.Outbox;
import io.txoutbox.OutboxSchema;
import io.txoutbox.PollingRelay;
import io.txoutbox.kafka.KafkaTransport;
import io.txoutbox.testing.history.Delivery;
import io.txoutbox.testing.history.HistoryChecker;
import io.txoutbox.testing.history.HistoryReport;
import io.txoutbox.testing.history.Ledger;
import io.txoutbox.testing.history.LedgerEntry;
import io.txoutbox.testing.history.LedgerWriter;
import io.txoutbox.testing.history.Verifier;
import io.txoutbox.testing.kafka.KafkaBrokerProcess;
import io.txoutbox.testing.postgres.TestDatabase;
import io.txoutbox.testing.postgres.TestPostgres;
import java.io.IOException;
import java.nio.file.Files;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The README's first command as a newcomer sees it: a freshly formatted broker, the relay with its defaults, and
 * writers at 2,000 events/s from the start. The broker logs no OutOfOrderSequenceException (the relay's producers
 * keep their sequences valid for the broker), and the first event is delivered within {@value #BOUND_MS} ms of its
 * commit, with no longer stall afterwards.
 */
class FirstRunIT {

    private static final Logger log = LoggerFactory.getLogger(FirstRunIT.class);
    /**
     * Far below the defects this guards (first delivery 4-5 s: producers made on the first batch, the transaction
     * state topic created by the first client) and above what a loaded CI machine shows: 513 ms on a quiet machine,
     * 1,221 and 1,252 ms in two CI runs of 2026-12-04 that failed the 1 s bound it had. The marker-write stall has
     * its own forced test (ConcurrentTransactionsRetryIT).
     */
    private static final long BOUND_MS = 2_500;

    private KafkaBrokerProcess broker;
    private TestDatabase db;
    private OutboxSchema schema;

    @BeforeEach
    void setUp() {
        broker = KafkaBrokerProcess.builder().startTimeout(Duration.ofMinutes(3)).start();
        // append times, as the README's job measures: a batch stuck in retries shows as late
        broker.createTopic("first-run", 3, Map.of("message.timestamp.type", "LogAppendTime"));
        db = TestPostgres.shared().newDatabase("first_run");
        schema = ItSupport.schema(db);
    }

    @AfterEach
    void tearDown() {
        if (db != null) {
            db.close();
        }
        if (broker != null) {
            broker.close();
        }
    }

    @Test
    void a_fresh_broker_logs_no_out_of_order_sequence_and_the_first_event_arrives_at_once() throws Exception {
        try (PollingRelay relay = PollingRelay.builder().dataSource(db.dataSource()).schema(schema).name("first-run")
                .transport(KafkaTransport.builder().bootstrapServers(broker.bootstrapServers()).build())
                .build().start()) {
            Outbox outbox = Outbox.builder().schema(schema).afterPublish(relay::nudge).build();
            try (LedgerWriter writer = ItSupport.ledgerWriter(db, outbox, "first-run").threads(8).keys(200)
                    .duration(Duration.ofSeconds(6)).targetRate(2_000).build().start()) {
                assertThat(writer.awaitDone(Duration.ofMinutes(1))).isTrue();
                assertThat(writer.errors()).isEmpty();
            }
            List<LedgerEntry> ledger = Ledger.read(db.dataSource(), db.schema());
            List<Delivery> deliveries = Verifier.builder(broker.bootstrapServers(), "first-run")
                    .expectedEvents(ledger.size()).deadline(Duration.ofMinutes(1)).build().readAll();
            HistoryReport report = HistoryChecker.check(ledger, deliveries);
            long firstCommitMs = ledger.stream().filter(e -> e.committedAt() != null)
                    .mapToLong(e -> e.committedAt().toEpochMilli()).min().orElseThrow();
            long firstDeliveryMs = deliveries.stream().mapToLong(Delivery::timestampMs).min().orElseThrow();
            long outOfOrder = brokerLogCount("OutOfOrderSequenceException");
            log.info("first run: {}; first delivery {} ms after the first commit; {} OutOfOrderSequenceException in "
                    + "the broker's log", report.summaryLine(), firstDeliveryMs - firstCommitMs, outOfOrder);
            assertThat(report.isClean()).as("%s", report).isTrue();
            assertThat(outOfOrder).as("OutOfOrderSequenceException lines in the broker's log %s",
                    broker.logFile()).isZero();
            assertThat(firstDeliveryMs - firstCommitMs).as("first delivery after the first commit, ms")
                    .isLessThan(BOUND_MS);
            assertThat(report.longestStallMs()).as("longest time without a delivery while events waited, ms")
                    .isLessThan(BOUND_MS);
        }
    }

    private long brokerLogCount(String needle) throws IOException {
        try (var lines = Files.lines(broker.logFile())) {
            return lines.filter(l -> l.contains(needle) && !l.stripLeading().startsWith("at ")).count();
        }
    }
}
