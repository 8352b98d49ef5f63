package io.txoutbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.txoutbox.OutboxGrants.Component;
import java.util.List;
import org.junit.jupiter.api.Test;

class OutboxGrantsTest {

    private final OutboxSchema schema = OutboxSchema.builder().schema("app").outboxTable("events").build();

    @Test
    void the_relay_gets_select_column_updates_the_sequence_and_the_shard_function_on_the_configured_table() {
        assertThat(OutboxGrants.sql(schema, Component.RELAY, "app_relay")).containsExactly(
                "GRANT USAGE ON SCHEMA \"app\" TO \"app_relay\"",
                "GRANT SELECT ON TABLE \"app\".\"events\" TO \"app_relay\"",
                "GRANT UPDATE (state, published_at, attempts, last_error, failed_at, next_attempt_at) ON TABLE"
                        + " \"app\".\"events\" TO \"app_relay\"",
                "GRANT SELECT ON SEQUENCE \"app\".\"events_id_seq\" TO \"app_relay\"",
                "GRANT EXECUTE ON FUNCTION \"app\".txoutbox_shard(text, integer) TO \"app_relay\"",
                "GRANT SELECT ON TABLE \"app\".\"events_installation\" TO \"app_relay\"",
                "GRANT SELECT, INSERT, UPDATE ON TABLE \"app\".\"events_progress\" TO \"app_relay\"");
    }

    @Test
    void every_component_starts_with_usage_on_the_schema_but_the_owner_which_creates_it() {
        for (Component c : Component.values()) {
            List<String> sql = OutboxGrants.sql(schema, c, "r");
            if (c == Component.MIGRATION_OWNER) {
                assertThat(sql).singleElement().asString().startsWith("DO $$").contains("ON DATABASE")
                        .contains("nspname = 'app'");
            } else {
                assertThat(sql.get(0)).isEqualTo("GRANT USAGE ON SCHEMA \"app\" TO \"r\"");
            }
        }
    }

    @Test
    void a_role_name_that_is_not_a_plain_identifier_is_refused_with_the_property() {
        assertThatThrownBy(() -> OutboxGrants.sql(schema, Component.WRITER, "app\"; DROP TABLE x; --"))
                .isInstanceOf(InvalidConfigurationException.class).hasMessageContaining("grants.role");
        assertThatThrownBy(() -> OutboxGrants.sql(schema, null, "r")).hasMessageContaining("grants.component");
    }
}
