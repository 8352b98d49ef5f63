package io.txoutbox.spring;

import static org.assertj.core.api.Assertions.assertThat;

import io.txoutbox.OutboxSchema;
import io.txoutbox.spring.autoconfigure.TxoutboxAutoConfiguration;
import io.txoutbox.spring.autoconfigure.TxoutboxTransportAutoConfiguration;
import io.txoutbox.spring.internal.SchemaFailureAnalyzer;
import io.txoutbox.spring.internal.SchemaNotReadyException;
import io.txoutbox.testing.postgres.TestDatabase;
import java.util.Map;
import java.util.UUID;
import javax.sql.DataSource;
import liquibase.integration.spring.SpringLiquibase;
import org.flywaydb.core.Flyway;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.diagnostics.FailureAnalysis;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.jdbc.autoconfigure.DataSourceTransactionManagerAutoConfiguration;
import org.springframework.boot.liquibase.autoconfigure.LiquibaseAutoConfiguration;
import org.springframework.boot.test.context.assertj.AssertableApplicationContext;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * An application that runs Liquibase with its own changelog: the starter does not migrate, and while the outbox's
 * scripts are not applied it fails the start saying what a Liquibase user does about it; with the documented
 * {@code txoutbox.schema.migrate=always} it applies them itself after Liquibase, into its own history table, and a
 * restart changes nothing.
 */
class LiquibaseCoexistenceIT {

    /** The documented recipe of docs/spring-boot.md, "Schema", for an application that runs Liquibase. */
    private static final String RECIPE = "txoutbox.schema.migrate=always";

    private static ApplicationContextRunner runner(TestDatabase db) {
        return new ApplicationContextRunner()
                .withConfiguration(AutoConfigurations.of(DataSourceAutoConfiguration.class,
                        DataSourceTransactionManagerAutoConfiguration.class, LiquibaseAutoConfiguration.class,
                        TxoutboxTransportAutoConfiguration.class, TxoutboxAutoConfiguration.class))
                .withPropertyValues(StarterDatabase.properties(db))
                .withPropertyValues("txoutbox.transport=in-memory", "txoutbox.relay.enabled=false",
                        "spring.liquibase.change-log=classpath:db/orders-changelog/orders.sql");
    }

    private static SchemaNotReadyException schemaFailure(AssertableApplicationContext context) {
        assertThat(context).hasFailed();
        Throwable failure = context.getStartupFailure();
        SchemaNotReadyException cause = null;
        for (Throwable c = failure; c != null; c = c.getCause()) {
            if (c instanceof SchemaNotReadyException s) {
                cause = s;
            }
        }
        assertThat(cause).as("cause of %s", failure).isNotNull();
        return cause;
    }

    private static long tables(TestDatabase db, String name) {
        return db.queryLong("SELECT count(*) FROM pg_tables WHERE schemaname = '" + db.schema() + "' AND tablename = '"
                + name + "'");
    }

    private static long applicationChangeSets(TestDatabase db) {
        return db.queryLong("SELECT count(*) FROM databasechangelog");
    }

    @Test
    void without_the_outbox_scripts_applied_the_start_fails_naming_the_location_and_migrate_always() {
        TestDatabase db = StarterDatabase.create("liquibase_missing");
        runner(db).run(context -> {
            SchemaNotReadyException cause = schemaFailure(context);
            assertThat(cause.getMessage()).contains("is missing").contains("Liquibase runs in this application")
                    .contains("this version of txoutbox needs version " + OutboxSchema.latestVersion())
                    .contains("Set txoutbox.schema.migrate=always").contains("after Liquibase")
                    .contains(OutboxSchema.SCRIPT_LOCATION)
                    .contains("placeholders schema=" + db.schema() + ", outbox_table=outbox_event, shards=32")
                    .contains(db.schema() + ".txoutbox_schema_history")
                    .as("no Flyway-only advice for a Liquibase application")
                    .doesNotContain(OutboxSchema.FLYWAY_HISTORY_TABLE).doesNotContain("V1__");
            FailureAnalysis analysis = new SchemaFailureAnalyzer().analyze(context.getStartupFailure());
            assertThat(analysis).as("Spring Boot's start-up report").isNotNull();
            assertThat(analysis.getDescription()).startsWith("txoutbox: the outbox schema").contains("is missing")
                    .doesNotContain("migrate=always");
            assertThat(analysis.getAction()).startsWith("Set txoutbox.schema.migrate=always")
                    .contains(OutboxSchema.SCRIPT_LOCATION);
        });
        assertThat(applicationChangeSets(db)).as("the application's own changelog ran").isEqualTo(1);
        assertThat(tables(db, "orders")).isEqualTo(1);
        assertThat(tables(db, "outbox_event")).as("the starter did not migrate").isZero();
    }

    @Test
    void with_migrate_always_the_starter_applies_its_scripts_after_liquibase_and_a_restart_changes_nothing() {
        TestDatabase db = StarterDatabase.create("liquibase_always");
        runner(db).withPropertyValues(RECIPE).run(context -> {
            assertThat(context).hasNotFailed();
            String[] liquibase = context.getBeanNamesForType(SpringLiquibase.class);
            assertThat(liquibase).hasSize(1);
            assertThat(context.getBeanFactory().getBeanDefinition("txoutboxSchema").getDependsOn())
                    .as("the outbox schema waits for the application's Liquibase run").contains(liquibase[0]);
            assertThat(tables(db, "orders")).isEqualTo(1);
            publishAnOrder(context, db, "o-1");
        });
        long history = db.queryLong("SELECT count(*) FROM txoutbox_schema_history");
        assertThat(db.queryLong("SELECT max(version) FROM txoutbox_schema_history"))
                .isEqualTo(OutboxSchema.latestVersion());
        assertThat(applicationChangeSets(db)).as("txoutbox's scripts stay out of the application's changelog")
                .isEqualTo(1);

        runner(db).withPropertyValues(RECIPE).run(context -> {
            assertThat(context).hasNotFailed();
            publishAnOrder(context, db, "o-2");
        });
        assertThat(db.queryLong("SELECT count(*) FROM txoutbox_schema_history")).as("nothing applied twice")
                .isEqualTo(history);
        assertThat(applicationChangeSets(db)).isEqualTo(1);
        assertThat(db.queryLong("SELECT count(*) FROM outbox_event")).as("the first run's event is kept")
                .isEqualTo(2);
    }

    @Test
    void an_outdated_outbox_schema_fails_the_start_naming_both_versions_and_migrate_always_upgrades_it() {
        TestDatabase db = StarterDatabase.create("liquibase_outdated");
        int older = 5;
        // an outbox applied by an earlier release: the scripts up to V5 only
        Flyway.configure().dataSource(db.dataSource()).schemas(db.schema())
                .locations(OutboxSchema.SCRIPT_LOCATION).table(OutboxSchema.FLYWAY_HISTORY_TABLE)
                .target(Integer.toString(older))
                .placeholders(Map.of("schema", db.schema(), "outbox_table", "outbox_event", "shards", "32"))
                .load().migrate();
        assertThat(appliedVersion(db)).isEqualTo(older);

        runner(db).run(context -> assertThat(schemaFailure(context).getMessage())
                .contains("is at version " + older + "; this version of txoutbox needs version "
                        + OutboxSchema.latestVersion())
                .contains("Set txoutbox.schema.migrate=always"));
        assertThat(appliedVersion(db)).as("the starter did not migrate").isEqualTo(older);

        runner(db).withPropertyValues(RECIPE).run(context -> {
            assertThat(context).hasNotFailed();
            publishAnOrder(context, db, "o-1");
        });
        assertThat(appliedVersion(db)).isEqualTo(OutboxSchema.latestVersion());
        runner(db).run(context -> assertThat(context).as("the check passes once upgraded").hasNotFailed());
    }

    private static int appliedVersion(TestDatabase db) {
        return OutboxSchema.builder().schema(db.schema()).build().appliedVersion(db.dataSource());
    }

    /** An order and its event in one transaction, as the application writes them; the event's row is there. */
    private static void publishAnOrder(AssertableApplicationContext context, TestDatabase db, String order) {
        OutboxEventPublisher publisher = context.getBean(OutboxEventPublisher.class);
        JdbcTemplate jdbc = new JdbcTemplate(context.getBean(DataSource.class));
        UUID id = new TransactionTemplate(context.getBean(PlatformTransactionManager.class)).execute(s -> {
            jdbc.update("INSERT INTO orders (id, total) VALUES (?, 5)", order);
            return publisher.publish("order.events", order, Map.of("total", 5));
        });
        assertThat(db.queryLong("SELECT count(*) FROM outbox_event WHERE event_id = '" + id + "'")).isEqualTo(1);
    }
}
