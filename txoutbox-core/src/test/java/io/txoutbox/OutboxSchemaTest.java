package io.txoutbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.Test;

class OutboxSchemaTest {

    @ParameterizedTest
    @ValueSource(strings = {"\"; drop table x; --", "Outbox", "1table", "outbox-event", "", "a b", "outbox\"", "ü"})
    void rejects_invalid_table_names_when_built(String name) {
        assertThatThrownBy(() -> OutboxSchema.builder().outboxTable(name).build())
                .isInstanceOf(InvalidConfigurationException.class)
                .hasMessageContaining("schema.outboxTable must match ^[a-z_][a-z0-9_]{0,62}$");
        assertThatThrownBy(() -> Outbox.builder().schema(OutboxSchema.builder().schema(name).build()).build())
                .isInstanceOf(InvalidConfigurationException.class).hasMessageContaining("schema.schema must match");
    }

    @Test
    void rejects_300_character_names_and_names_too_long_for_derived_names() {
        assertThatThrownBy(() -> OutboxSchema.builder().schema("s".repeat(300)).build())
                .hasMessageContaining("(300 characters)");
        assertThatThrownBy(() -> OutboxSchema.builder().outboxTable("t".repeat(60)).build())
                .hasMessageContaining("derived names");
    }

    @Test
    void rejects_shard_counts_out_of_range_and_names_the_property() {
        assertThatThrownBy(() -> OutboxSchema.builder().shards(0).build())
                .hasMessage("schema.shards must be between 1 and 4096, was 0 (setting txoutbox.schema.shards)");
    }

    @Test
    void quotes_names_in_sql() {
        assertThat(OutboxSchema.builder().schema("app").outboxTable("events").build().qualifiedOutboxTable())
                .isEqualTo("\"app\".\"events\"");
    }

    @Test
    void rejects_bad_limits_naming_the_property() {
        assertThatThrownBy(() -> Outbox.builder().maxPayloadBytes(0).build())
                .isInstanceOf(InvalidConfigurationException.class)
                .hasMessageContaining("outbox.maxPayloadBytes must be between 1 and");
    }

    @Test
    void the_notify_channel_fits_postgresql_limit_and_stays_apart_for_long_names() {
        String longTable = "t".repeat(48);
        OutboxSchema a = OutboxSchema.builder().schema("s".repeat(40) + "_a").outboxTable(longTable).build();
        OutboxSchema b = OutboxSchema.builder().schema("s".repeat(40) + "_b").outboxTable(longTable).build();
        assertThat(a.notifyChannel()).hasSizeLessThanOrEqualTo(63).startsWith("txoutbox.ssss");
        assertThat(b.notifyChannel()).hasSizeLessThanOrEqualTo(63).isNotEqualTo(a.notifyChannel());
        assertThat(a.notifyChannel()).as("the same schema, the same channel (writer and relay agree)")
                .isEqualTo(OutboxSchema.builder().schema("s".repeat(40) + "_a").outboxTable(longTable).build()
                        .notifyChannel());
        assertThat(OutboxSchema.defaults().notifyChannel()).as("short names keep the plain channel")
                .isEqualTo("txoutbox.public.outbox_event");
    }
}
