package io.txoutbox.spring.internal;

import io.txoutbox.OutboxSchema;
import java.util.Objects;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Brings the outbox schema up to date at start, or checks that it is. With {@code txoutbox.schema.migrate=auto}
 * (default) the starter applies its scripts itself unless the application runs Flyway or Liquibase; then it only
 * checks the version and, when the schema is missing or old, fails the start naming what to do: with Flyway, the
 * location, history table and placeholders of a second Flyway run; with Liquibase,
 * {@code txoutbox.schema.migrate=always} (the scripts are in Flyway's format, and the check reads no Liquibase
 * history). It runs after the application's own database initialization ({@code @DependsOnDatabaseInitialization}).
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

    /** Migrates or checks; throws {@link SchemaNotReadyException} when the schema is missing or old. */
    public void initialize() {
        if ("always".equals(mode) || ("auto".equals(mode) && migrationTool == null)) {
            schema.migrate(dataSource);
            return;
        }
        int applied = schema.appliedVersion(dataSource);
        int latest = OutboxSchema.latestVersion();
        if (applied < latest) {
            throw new SchemaNotReadyException(found(applied, latest), "Liquibase".equals(migrationTool)
                    ? liquibaseAction() : flywayAction());
        }
        log.info("txoutbox: outbox schema {} is at version {} (applied by {}), as this version needs", schema, applied,
                migrationTool != null ? migrationTool : "a migration tool");
    }

    private String found(int applied, int latest) {
        String why = "never".equals(mode) || migrationTool == null
                ? "txoutbox.schema.migrate=never"
                : migrationTool + " runs in this application, so txoutbox does not migrate on start";
        return "the outbox schema " + schema + " is " + (applied == 0 ? "missing" : "at version " + applied)
                + "; this version of txoutbox needs version " + latest + ". " + why + ".";
    }

    private String placeholders() {
        return "placeholders schema=" + schema.schema() + ", outbox_table=" + schema.outboxTable() + ", shards="
                + schema.shards();
    }

    /** Flyway runs a second time over txoutbox's location, into a history table of its own. */
    private String flywayAction() {
        return "Apply txoutbox's scripts with their own history table so they never mix with your own V1__: location "
                + OutboxSchema.SCRIPT_LOCATION + ", table " + schema.schema() + "." + OutboxSchema.FLYWAY_HISTORY_TABLE
                + ", " + placeholders() + " (docs/spring-boot.md, \"Schema\"), or set txoutbox.schema.migrate=always "
                + "to let txoutbox apply them at start";
    }

    /**
     * The scripts are Flyway's format, not a changelog, and a schema Liquibase applied would have no history
     * {@link OutboxSchema#appliedVersion} reads: txoutbox applies them itself, after Liquibase.
     */
    private String liquibaseAction() {
        return "Set txoutbox.schema.migrate=always: txoutbox then applies its scripts (location "
                + OutboxSchema.SCRIPT_LOCATION + ", " + placeholders() + "; Flyway-style SQL, not a Liquibase "
                + "changelog) at start, after Liquibase, recording them in " + schema.schema()
                + ".txoutbox_schema_history beside your DATABASECHANGELOG, under an advisory lock so every instance "
                + "may start at once. Or apply them before the start with OutboxSchema.migrate(dataSource), as a user "
                + "that may create tables (docs/spring-boot.md, \"Schema\")";
    }
}
