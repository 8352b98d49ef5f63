package io.txoutbox.testing.history;

import java.time.Duration;
import java.util.UUID;
import java.util.function.Supplier;
import javax.sql.DataSource;

/** The validated options of a {@link LedgerWriter}, as its builder made them. */
record LedgerWriterConfig(DataSource dataSource, String schema, int threads, int keys, long events,
                          Duration duration, double rollbackShare, int eventsPerTransaction,
                          LedgerWriter.MultiEventMode mode, double targetRate, EventInserter inserter,
                          CommitListener commitListener, long seed, Supplier<UUID> eventIds, int maxAttempts,
                          Duration stopTimeout) {
}
