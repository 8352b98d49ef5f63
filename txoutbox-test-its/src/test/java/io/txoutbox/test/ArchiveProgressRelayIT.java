package io.txoutbox.test;

import io.txoutbox.internal.progress.ProgressModels;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;

/**
 * The whole relay acceptance suite, and the in-memory transport's own scenarios, with the relay on a second progress
 * model ({@link ArchiveProgress}: the mark moves delivered rows into an archive table). The model is put behind the
 * scenario's table with the internal hook {@link ProgressModels#use}, so every relay and admin of the scenario takes
 * it.
 */
class ArchiveProgressRelayIT extends PollingRelayInMemoryIT {

    private String archive;
    private AutoCloseable inUse;

    @BeforeEach
    void archiveProgress() {
        String t = schema().qualifiedOutboxTable();
        archive = "\"" + schema().schema() + "\".\"" + schema().outboxTable() + "_archive\"";
        db().execute("CREATE TABLE " + archive + " (LIKE " + t + " INCLUDING DEFAULTS)");
        inUse = ProgressModels.use(new ArchiveProgress(schema(), archive));
    }

    @AfterEach
    void noArchiveProgress() throws Exception {
        inUse.close();
    }

    /** The outbox table's rows and the archived ones. */
    @Override
    protected String everyRow() {
        return "(SELECT * FROM " + schema().qualifiedOutboxTable() + " UNION ALL SELECT * FROM " + archive + ")";
    }

    /** Published rows are the archived ones, none of them left in the outbox table. */
    @Override
    protected long publishedRows() {
        return db().queryLong("SELECT count(*) FROM " + archive + " a WHERE NOT EXISTS (SELECT FROM "
                + schema().qualifiedOutboxTable() + " o WHERE o.id = a.id)");
    }
}
