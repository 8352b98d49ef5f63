package io.txoutbox.spring;

import static org.assertj.core.api.Assertions.assertThat;

import io.txoutbox.OutboxException;
import io.txoutbox.OutboxSchema;
import io.txoutbox.spring.autoconfigure.TxoutboxAutoConfiguration;
import io.txoutbox.spring.autoconfigure.TxoutboxTransportAutoConfiguration;
import io.txoutbox.testing.postgres.TestDatabase;
import java.util.Map;
import java.util.UUID;
import javax.sql.DataSource;
import org.flywaydb.core.Flyway;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.flyway.autoconfigure.FlywayAutoConfiguration;
import org.springframework.boot.flyway.autoconfigure.FlywayMigrationStrategy;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.jdbc.autoconfigure.DataSourceTransactionManagerAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * An application that runs Flyway with its own {@code V1__}: the starter does not migrate, fails the start naming
 * what to add while the outbox's scripts are not applied, and starts once they are applied with their own history
 * table next to the application's.
 */
class FlywayCoexistenceIT {

    private static ApplicationContextRunner runner(TestDatabase db) {
        return new ApplicationContextRunner()
                .withConfiguration(AutoConfigurations.of(DataSourceAutoConfiguration.class,
                        DataSourceTransactionManagerAutoConfiguration.class, FlywayAutoConfiguration.class,
                        TxoutboxTransportAutoConfiguration.class, TxoutboxAutoConfiguration.class))
                .withPropertyValues(StarterDatabase.properties(db))
                .withPropertyValues("txoutbox.transport=in-memory", "txoutbox.relay.enabled=false",
                        "spring.flyway.locations=classpath:db/orders-migration");
    }

    @Test
    void without_the_outbox_scripts_applied_the_start_fails_naming_location_history_table_and_placeholders() {
        TestDatabase db = StarterDatabase.create("flyway_missing");
        runner(db).run(context -> {
            assertThat(context).hasFailed();
            Throwable failure = context.getStartupFailure();
            OutboxException cause = null;
            for (Throwable c = failure; c != null; c = c.getCause()) {
                if (c instanceof OutboxException o) {
                    cause = o;
                }
            }
            assertThat(cause).as("cause of %s", failure).isNotNull();
            assertThat(cause.getMessage()).contains("is missing").contains("Flyway runs in this application")
                    .contains(OutboxSchema.SCRIPT_LOCATION)
                    .contains(db.schema() + "." + OutboxSchema.FLYWAY_HISTORY_TABLE)
                    .contains("placeholders schema=" + db.schema() + ", outbox_table=outbox_event, shards=32");
        });
        assertThat(db.queryLong("SELECT count(*) FROM flyway_schema_history WHERE success"))
                .as("the application's own migration ran").isEqualTo(1);
        assertThat(db.queryLong("SELECT count(*) FROM pg_tables WHERE schemaname = '" + db.schema()
                + "' AND tablename = 'outbox_event'")).as("the starter did not migrate").isZero();
    }

    @Test
    void with_the_outbox_scripts_applied_by_flyway_into_their_own_history_table_it_starts_and_publishes() {
        TestDatabase db = StarterDatabase.create("flyway_applied");
        runner(db).withUserConfiguration(OutboxMigration.class)
                .withPropertyValues("test.schema=" + db.schema()).run(context -> {
                    assertThat(context).hasNotFailed();
                    OutboxEventPublisher publisher = context.getBean(OutboxEventPublisher.class);
                    JdbcTemplate jdbc = new JdbcTemplate(context.getBean(DataSource.class));
                    UUID id = new TransactionTemplate(context.getBean(PlatformTransactionManager.class))
                            .execute(s -> {
                                jdbc.update("INSERT INTO orders (id, total) VALUES ('o-1', 5)");
                                return publisher.publish("order.events", "o-1", Map.of("total", 5));
                            });
                    assertThat(db.queryLong("SELECT count(*) FROM outbox_event WHERE event_id = '" + id + "'"))
                            .isEqualTo(1);
                });
        assertThat(db.queryLong("SELECT count(*) FROM flyway_schema_history WHERE success")).isEqualTo(1);
        assertThat(db.queryLong("SELECT max(version::int) FROM " + OutboxSchema.FLYWAY_HISTORY_TABLE
                + " WHERE success AND version <> '0'")).isEqualTo(OutboxSchema.latestVersion());
    }

    /** The documented second Flyway run of docs/spring-boot.md, "Schema": after the application's own. */
    @Configuration(proxyBeanMethods = false)
    static class OutboxMigration {
        @Bean
        FlywayMigrationStrategy migrateWithTxoutbox(DataSource dataSource,
                org.springframework.core.env.Environment env) {
            String schema = env.getRequiredProperty("test.schema");
            return flyway -> {
                flyway.migrate();
                Flyway.configure().dataSource(dataSource).schemas(schema)
                        .locations(OutboxSchema.SCRIPT_LOCATION).table(OutboxSchema.FLYWAY_HISTORY_TABLE)
                        .baselineOnMigrate(true).baselineVersion("0")
                        .placeholders(Map.of("schema", schema, "outbox_table", "outbox_event", "shards", "32"))
                        .load().migrate();
            };
        }
    }
}
