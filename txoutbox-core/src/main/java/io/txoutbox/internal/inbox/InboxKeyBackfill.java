package io.txoutbox.internal.inbox;

import io.txoutbox.internal.pg.AdvisoryLocks;
import io.txoutbox.internal.pg.InboxKeyBackfillStatements;
import io.txoutbox.internal.pg.Jdbc;
import io.txoutbox.internal.pg.PgErrors;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Schema V6's online step: fills {@code inbox_event.key_bytes} of rows stored before V6 with their key's UTF-8
 * ({@code partition_key} was text then, so that is the key those rows kept). It runs after the script's transaction
 * committed, never inside it: a batch is a range of heap pages ({@code ctid} range, a TID range scan on PostgreSQL
 * 14+, so no index and no full scan per batch) updated in a short transaction of its own with a lock timeout; a
 * batch that meets a locked row is retried, then left for the next run.
 * <ul>
 *   <li>Idempotent: only rows with a key and no {@code key_bytes} change, always to the same value.</li>
 *   <li>Resumable: no cursor is kept; a run that stopped leaves rows that the next run (the next migrate) finds.</li>
 *   <li>Safe to race: one runner per schema at a time (a session advisory lock taken with try; the other returns),
 *   and even two would only write the same values.</li>
 * </ul>
 * When a run covered every page without leaving a batch behind, it records itself in {@code txoutbox_backfill}, and
 * later migrations return after one primary-key read. Nothing depends on it having finished: readers take a NULL
 * {@code key_bytes} as the UTF-8 of {@code partition_key} (also for rows that a receiver older than V6 writes
 * during a rolling upgrade, after the backfill).
 */
public final class InboxKeyBackfill {

    private static final Logger log = LoggerFactory.getLogger(InboxKeyBackfill.class);
    public static final String STEP = "V6 inbox_event.key_bytes";
    /** 1,000 pages of 8 kB: about 8 MB of heap per transaction. */
    public static final int DEFAULT_PAGES_PER_BATCH = 1_000;
    private static final int ATTEMPTS_PER_BATCH = 3;
    /** Serialization failure: like a lock wait, a batch that meets it is tried again. */
    private static final String SERIALIZATION_FAILURE = "40001";

    /** What a run did: rows filled, batches committed, and whether the step is now recorded as done. */
    public record Result(long rows, int batches, boolean done) {
    }

    private final String schema;
    private final InboxKeyBackfillStatements statements;
    private final AdvisoryLocks.Key lock;
    private final int pagesPerBatch;

    public InboxKeyBackfill(String schema, int pagesPerBatch) {
        if (pagesPerBatch < 1) {
            throw new IllegalArgumentException("pagesPerBatch must be >= 1, was " + pagesPerBatch);
        }
        this.schema = schema;
        this.statements = new InboxKeyBackfillStatements(schema);
        this.lock = AdvisoryLocks.inboxBackfill(schema);
        this.pagesPerBatch = pagesPerBatch;
    }

    /** Runs the step on {@code c} (left with auto-commit off); commits its own transactions. */
    public Result run(Connection c) throws SQLException {
        c.setAutoCommit(false);
        if (isDone(c)) {
            c.commit();
            return new Result(0, 0, true);
        }
        if (!lock.tryLock(c)) {
            c.commit();
            log.info("txoutbox-migrate: {} of schema {} is running elsewhere; this migration leaves it to that one",
                    STEP, schema);
            return new Result(0, 0, false);
        }
        try {
            long pages = pages(c);
            long rows = 0;
            int batches = 0;
            boolean complete = true;
            for (long from = 0; from < pages; from += pagesPerBatch) {
                long to = Math.min(pages, from + pagesPerBatch);
                Integer filled = batch(c, from, to);
                if (filled == null) {
                    complete = false;
                    continue;
                }
                rows += filled;
                batches++;
            }
            if (complete) {
                Jdbc.update(c, statements.recordDone(), STEP, rows, batches);
                c.commit();
                log.info("txoutbox-migrate: {} of schema {} done: {} rows in {} batches", STEP, schema, rows,
                        batches);
            } else {
                log.warn("txoutbox-migrate: {} of schema {}: {} rows in {} batches; some pages met locked rows and "
                        + "are left for the next migration (readers do not depend on them)", STEP, schema, rows,
                        batches);
            }
            return new Result(rows, batches, complete);
        } finally {
            unlock(c);
        }
    }

    private boolean isDone(Connection c) throws SQLException {
        return Jdbc.queryLong(c, statements.isDone(), STEP).isPresent();
    }

    private long pages(Connection c) throws SQLException {
        long pages = Jdbc.queryLong(c, statements.pages(), statements.inbox()).orElse(0);
        c.commit();
        return pages;
    }

    /** One batch of pages [from, to) in its own transaction; the rows filled, or null when it gave up for now. */
    private Integer batch(Connection c, long from, long to) throws SQLException {
        for (int attempt = 1; ; attempt++) {
            try {
                try (Statement st = c.createStatement()) {
                    // a worker or receiver holds its rows only for a short transaction; never queue behind a long one
                    st.execute(statements.batchLockTimeout());
                    st.execute(statements.batchStatementTimeout());
                }
                int n = Jdbc.update(c, statements.fillPages(), "(" + from + ",0)", "(" + to + ",0)");
                c.commit();
                return n;
            } catch (SQLException e) {
                c.rollback();
                boolean contended = PgErrors.isLockBusy(e) || PgErrors.is(e, SERIALIZATION_FAILURE)
                        || PgErrors.is(e, PgErrors.QUERY_CANCELED);
                if (!contended) {
                    throw e;
                }
                if (attempt >= ATTEMPTS_PER_BATCH) {
                    log.warn("txoutbox-migrate: {} of schema {}: pages {}-{} skipped for now after {} attempts: {}",
                            STEP, schema, from, to, attempt, e.getMessage());
                    return null;
                }
            }
        }
    }

    private void unlock(Connection c) {
        try {
            lock.unlock(c);
            c.commit();
        } catch (SQLException e) {
            // the lock is the session's: closing the connection releases it
            log.debug("txoutbox-migrate: releasing the {} lock failed: {}", STEP, e.toString());
        }
    }
}
