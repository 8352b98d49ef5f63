package io.txoutbox.spring.internal;

import io.txoutbox.OutboxException;
import io.txoutbox.OutboxSchema;
import java.util.Objects;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Brings the outbox schema up to date at start, or checks that it is. With {@code txoutbox.schema.migrate=auto}
 * (default) the starter applies its scripts itself unless the application runs Flyway or Liquibase; then it only
 * checks the version and, when the schema is missing or old, fails the start naming what to add to the migration
 * tool. It runs after the application's own database initialization ({@code @DependsOnDatabaseInitialization}).
 */
public final class SchemaInitializer {

    private static final Logger log = LoggerFactory.getLogger(SchemaInitializer.class);

    private final OutboxSchema schema;
    private final DataSource dataSource;
    private final String mode;
    private final String migrationTool;

    /** {@code migrationTool}: "Flyway" or "Liquibase" when the application runs one, else null. */
    public SchemaInitializer(OutboxSchema schema, DataSource dataSource, String mode, String migrationTool) {
        this.schema = Objects.requireNonNull(schema, "schema");
        this.dataSource = Objects.requireNonNull(dataSource, "dataSource");
        this.mode = mode;
        this.migrationTool = migrationTool;
    }

    /** Migrates or checks; throws when the schema is not usable. */
    public void initialize() {
        if ("always".equals(mode) || ("auto".equals(mode) && migrationTool == null)) {
            schema.migrate(dataSource);
            return;
        }
        int applied = schema.appliedVersion(dataSource);
        int latest = OutboxSchema.latestVersion();
        if (applied < latest) {
            throw new OutboxException(missing(applied, latest));
        }
        log.info("txoutbox: outbox schema {} is at version {} (applied by {}), as this version needs", schema, applied,
                migrationTool != null ? migrationTool : "a migration tool");
    }

    private String missing(int applied, int latest) {
        String why = migrationTool != null
                ? migrationTool + " runs in this application, so txoutbox does not migrate on start"
                : "txoutbox.schema.migrate=never";
        return "the outbox schema " + schema + " is " + (applied == 0 ? "missing" : "at version " + applied)
                + "; this version of txoutbox needs version " + latest + ". " + why + ". Apply txoutbox's scripts "
                + "with their own history table so they never mix with your own V1__: location "
                + OutboxSchema.SCRIPT_LOCATION + ", table " + schema.schema() + "." + OutboxSchema.FLYWAY_HISTORY_TABLE
                + ", placeholders schema=" + schema.schema() + ", outbox_table=" + schema.outboxTable() + ", shards="
                + schema.shards() + " (docs/spring-boot.md, \"Schema\"), or set txoutbox.schema.migrate=always to "
                + "let txoutbox apply them at start";
    }
}
