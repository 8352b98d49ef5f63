package io.txoutbox.testing.history;

import static org.assertj.core.api.Assertions.assertThat;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class LedgerWriterIT {

    private TestDatabase db;
    private String outbox;

    @BeforeEach
    void createSchema() throws SQLException {
        db = new TestDatabase("ledger_it");
        outbox = db.schema + ".dummy_outbox";
        db.execute("CREATE TABLE " + outbox + " (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,"
                + " event_id uuid NOT NULL UNIQUE, key text NOT NULL, seq bigint NOT NULL)");
    }

    @AfterEach
    void dropSchema() throws SQLException {
        db.close();
    }

    @Test
    void concurrentWritersCommitGaplessSeqsAndRollbacksLeaveNoTrace() throws Exception {
        ConcurrentLinkedQueue<CommitListener.Commit> commits = new ConcurrentLinkedQueue<>();
        LedgerWriter.Stats stats;
        List<UUID> rolledBack;
        try (LedgerWriter writer = LedgerWriter.builder(db.dataSource, db.schema)
                .threads(4).keys(50).events(2_000).rollbackShare(0.10).seed(7)
                .eventInserter(this::insertOutboxRow)
                .onCommit(commits::add)
                .build().start()) {
            assertThat(writer.awaitDone(Duration.ofSeconds(120))).as("writers finished").isTrue();
            stats = writer.stats();
            rolledBack = writer.rolledBackEventIds();
            assertThat(writer.errors()).isEmpty();
        }

        assertThat(stats.errors()).isZero();
        assertThat(stats.committedEvents() + stats.rolledBackEvents()).isEqualTo(2_000);
        assertThat(stats.committedTransactions()).isEqualTo(stats.committedEvents());
        assertThat(stats.rolledBackEvents()).isBetween(100L, 300L); // 10 % of 2,000, loosely
        assertThat(rolledBack).hasSize((int) stats.rolledBackEvents());

        List<LedgerEntry> ledger = Ledger.read(db.dataSource, db.schema);
        assertThat(ledger).hasSize((int) stats.committedEvents());
        Set<UUID> ledgerIds = ledger.stream().map(LedgerEntry::eventId).collect(Collectors.toSet());
        assertThat(ledgerIds).doesNotContainAnyElementsOf(rolledBack);

        Map<String, List<Long>> outboxSeqsInIdOrder = outboxSeqsByKeyInIdOrder();
        Set<UUID> outboxIds = outboxEventIds();
        assertThat(outboxIds).isEqualTo(ledgerIds);
        assertThat(outboxIds).doesNotContainAnyElementsOf(rolledBack);

        Map<String, List<Long>> ledgerSeqs = ledger.stream().collect(Collectors.groupingBy(LedgerEntry::key,
                LinkedHashMap::new, Collectors.mapping(LedgerEntry::seq, Collectors.toList())));
        assertThat(ledgerSeqs.keySet()).allMatch(key -> key.matches("k-00[0-5]\\d"));
        ledgerSeqs.forEach((key, seqs) -> {
            assertThat(seqs).as("committed seqs of %s", key).isEqualTo(oneTo(seqs.size()));
            // the key lock is taken before the outbox insert, so outbox (id) order is seq order
            assertThat(outboxSeqsInIdOrder.get(key)).as("outbox order of %s", key).isEqualTo(seqs);
        });
        assertThat(keySeqRows()).isEqualTo(ledgerSeqs.entrySet().stream()
                .collect(Collectors.toMap(Map.Entry::getKey, e -> (long) e.getValue().size())));

        assertThat(commits).hasSize((int) stats.committedTransactions());
        assertThat(commits).allSatisfy(commit -> {
            assertThat(commit.events()).hasSize(1);
            assertThat(commit.commitReturnNanos()).isGreaterThanOrEqualTo(commit.startNanos());
            assertThat(ledgerIds).contains(commit.events().get(0).eventId());
        });
    }

    @Test
    void retriesSerializationFailuresAndCountsOtherErrors() throws Exception {
        AtomicInteger calls = new AtomicInteger();
        AtomicInteger serializationFailures = new AtomicInteger();
        AtomicInteger otherFailures = new AtomicInteger();
        LedgerWriter.Stats stats;
        try (LedgerWriter writer = LedgerWriter.builder(db.dataSource, db.schema)
                .threads(2).keys(5).events(300).rollbackShare(0)
                .eventInserter((connection, eventId, key, seq) -> {
                    int call = calls.incrementAndGet();
                    if (call % 20 == 0) {
                        serializationFailures.incrementAndGet();
                        throw new SQLException("simulated serialization failure", "40001");
                    }
                    if (call % 47 == 0) {
                        otherFailures.incrementAndGet();
                        throw new SQLException("simulated constraint violation", "23505");
                    }
                    insertOutboxRow(connection, eventId, key, seq);
                })
                .build().start()) {
            assertThat(writer.awaitDone(Duration.ofSeconds(60))).isTrue();
            stats = writer.stats();
            assertThat(writer.errors()).hasSize(otherFailures.get())
                    .allSatisfy(e -> assertThat(((SQLException) e).getSQLState()).isEqualTo("23505"));
        }

        assertThat(serializationFailures.get()).isPositive();
        assertThat(otherFailures.get()).isPositive();
        assertThat(stats.retries()).isEqualTo(serializationFailures.get());
        assertThat(stats.errors()).isEqualTo(otherFailures.get());
        assertThat(stats.failedEvents()).isEqualTo(otherFailures.get());
        assertThat(stats.committedEvents() + stats.failedEvents()).isEqualTo(300);

        List<LedgerEntry> ledger = Ledger.read(db.dataSource, db.schema);
        assertThat(ledger).hasSize((int) stats.committedEvents());
        assertThat(outboxEventIds()).isEqualTo(ledger.stream().map(LedgerEntry::eventId).collect(Collectors.toSet()));
        ledger.stream().collect(Collectors.groupingBy(LedgerEntry::key,
                        Collectors.mapping(LedgerEntry::seq, Collectors.toList())))
                .forEach((key, seqs) -> assertThat(seqs).as(key).isEqualTo(oneTo(seqs.size())));
    }

    @Test
    void severalEventsPerTransactionAtATargetRate() throws Exception {
        ConcurrentLinkedQueue<CommitListener.Commit> commits = new ConcurrentLinkedQueue<>();
        long started = System.nanoTime();
        LedgerWriter.Stats stats;
        try (LedgerWriter writer = LedgerWriter.builder(db.dataSource, db.schema)
                .threads(3).keys(20).events(600).eventsPerTransaction(3)
                .multiEventMode(LedgerWriter.MultiEventMode.DISTINCT_KEYS)
                .targetRate(1_000).rollbackShare(0.2)
                .eventInserter(this::insertOutboxRow)
                .onCommit(commits::add)
                .build().start()) {
            assertThat(writer.awaitDone(Duration.ofSeconds(60))).isTrue();
            stats = writer.stats();
        }
        double seconds = (System.nanoTime() - started) / 1e9;

        // 600 events at 1,000/s: the last transaction is due at 0.597 s, so it cannot be faster than that
        assertThat(seconds).isGreaterThan(0.59);
        assertThat(stats.errors()).isZero();
        assertThat(stats.committedEvents() + stats.rolledBackEvents()).isEqualTo(600);
        assertThat(stats.committedEvents()).isEqualTo(3 * stats.committedTransactions());
        assertThat(commits).allSatisfy(commit -> {
            assertThat(commit.events()).extracting(LedgerEntry::key).doesNotHaveDuplicates().hasSize(3);
            assertThat(commit.startNanos()).isGreaterThanOrEqualTo(commit.intendedStartNanos());
        });
        List<LedgerEntry> ledger = Ledger.read(db.dataSource, db.schema);
        assertThat(ledger).hasSize((int) stats.committedEvents());
        ledger.stream().collect(Collectors.groupingBy(LedgerEntry::key,
                        Collectors.mapping(LedgerEntry::seq, Collectors.toList())))
                .forEach((key, seqs) -> assertThat(seqs).as(key).isEqualTo(oneTo(seqs.size())));
    }

    @Test
    void severalSeqsOfOneKeyPerTransactionForADuration() throws Exception {
        LedgerWriter.Stats stats;
        try (LedgerWriter writer = LedgerWriter.builder(db.dataSource, db.schema)
                .threads(2).keys(3).duration(Duration.ofMillis(500)).eventsPerTransaction(4).rollbackShare(0.1)
                .eventInserter(this::insertOutboxRow)
                .build().start()) {
            assertThat(writer.awaitDone(Duration.ofSeconds(30))).isTrue();
            stats = writer.stats();
        }

        assertThat(stats.committedTransactions()).isPositive();
        assertThat(stats.committedEvents()).isEqualTo(4 * stats.committedTransactions());
        Map<String, List<Long>> outboxSeqs = outboxSeqsByKeyInIdOrder();
        List<LedgerEntry> ledger = Ledger.read(db.dataSource, db.schema);
        ledger.stream().collect(Collectors.groupingBy(LedgerEntry::key,
                        Collectors.mapping(LedgerEntry::seq, Collectors.toList())))
                .forEach((key, seqs) -> {
                    assertThat(seqs).as(key).isEqualTo(oneTo(seqs.size()));
                    assertThat(outboxSeqs.get(key)).as(key).isEqualTo(seqs);
                });
    }

    private void insertOutboxRow(Connection connection, UUID eventId, String key, long seq) throws SQLException {
        try (PreparedStatement insert = connection.prepareStatement(
                "INSERT INTO " + outbox + " (event_id, key, seq) VALUES (?, ?, ?)")) {
            insert.setObject(1, eventId);
            insert.setString(2, key);
            insert.setLong(3, seq);
            insert.executeUpdate();
        }
    }

    private Set<UUID> outboxEventIds() throws SQLException {
        Set<UUID> ids = new HashSet<>();
        query("SELECT event_id FROM " + outbox, rows -> ids.add(rows.getObject(1, UUID.class)));
        return ids;
    }

    private Map<String, List<Long>> outboxSeqsByKeyInIdOrder() throws SQLException {
        Map<String, List<Long>> seqs = new LinkedHashMap<>();
        query("SELECT key, seq FROM " + outbox + " ORDER BY id",
                rows -> seqs.computeIfAbsent(rows.getString(1), k -> new ArrayList<>()).add(rows.getLong(2)));
        return seqs;
    }

    private Map<String, Long> keySeqRows() throws SQLException {
        Map<String, Long> rows = new LinkedHashMap<>();
        query("SELECT key, seq FROM " + db.schema + "." + Ledger.KEY_SEQ_TABLE + " WHERE seq > 0",
                row -> rows.put(row.getString(1), row.getLong(2)));
        return rows;
    }

    private interface RowConsumer {
        void accept(ResultSet row) throws SQLException;
    }

    private void query(String sql, RowConsumer consumer) throws SQLException {
        try (Connection connection = db.dataSource.getConnection();
             Statement statement = connection.createStatement();
             ResultSet rows = statement.executeQuery(sql)) {
            while (rows.next()) {
                consumer.accept(rows);
            }
        }
    }

    private static List<Long> oneTo(int n) {
        List<Long> seqs = new ArrayList<>(n);
        for (long seq = 1; seq <= n; seq++) {
            seqs.add(seq);
        }
        return seqs;
    }
}
