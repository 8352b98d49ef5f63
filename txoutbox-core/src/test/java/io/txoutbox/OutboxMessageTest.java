package io.txoutbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.UUID;
import org.junit.jupiter.api.Test;

class OutboxMessageTest {

    private static OutboxMessage.Builder valid() {
        return OutboxMessage.builder().topic("orders").aggregate("Order", "o-1").eventType("OrderCreated")
                .jsonPayload("{\"id\":1}");
    }

    @Test
    void key_defaults_to_the_aggregate_id_and_can_be_null() {
        assertThat(valid().build().key()).isEqualTo("o-1");
        assertThat(valid().key("customer-7").build().key()).isEqualTo("customer-7");
        assertThat(valid().key(null).build().key()).isNull();
    }

    @Test
    void event_id_is_a_uuidv7_unless_given() {
        assertThat(valid().build().eventId().version()).isEqualTo(7);
        UUID given = UUID.randomUUID();
        assertThat(valid().eventId(given).build().eventId()).isEqualTo(given);
    }

    @Test
    void rejects_missing_blank_and_invalid_topics_with_the_fix() {
        assertThatThrownBy(() -> valid().topic(null).build()).isInstanceOf(InvalidMessageException.class)
                .hasMessageContaining("topic is missing").hasMessageContaining(".topic(");
        assertThatThrownBy(() -> valid().topic("  ").build()).hasMessageContaining("topic is missing");
        assertThatThrownBy(() -> valid().topic("orders v2").build())
                .hasMessageContaining("not a valid Kafka topic name").hasMessageContaining("[a-zA-Z0-9._-]");
        assertThatThrownBy(() -> valid().topic("x".repeat(250)).build()).hasMessageContaining("1 to 249");
        assertThatThrownBy(() -> valid().topic("..").build()).hasMessageContaining("not a valid Kafka topic");
    }

    @Test
    void rejects_invalid_json_naming_the_position() {
        assertThatThrownBy(() -> valid().jsonPayload("{\"id\":").build())
                .isInstanceOf(InvalidMessageException.class).hasMessageContaining("payload is not valid JSON")
                .hasMessageContaining("character");
        assertThatThrownBy(() -> valid().jsonPayload("{\"a\":\"\\u0000\"}").build())
                .hasMessageContaining("\\u0000");
    }

    /** The Java writer refuses every name the outbox table's V7 constraints refuse, before any INSERT. */
    @org.junit.jupiter.params.ParameterizedTest
    @org.junit.jupiter.params.provider.ValueSource(strings = {"event_id", "event_type", "aggregate_type",
        "aggregate_id", "aggregate_version", "Event_ID", "AGGREGATE_VERSION", "txoutbox_replay", "TxOutbox-Trace"})
    void rejects_every_reserved_header_name_in_any_case(String name) {
        assertThatThrownBy(() -> valid().header(name, "x").build()).isInstanceOf(InvalidMessageException.class)
                .hasMessageContaining("header name '" + name + "' is reserved");
    }

    @Test
    void rejects_control_characters_in_headers_and_reserved_header_names() {
        assertThatThrownBy(() -> valid().header("trace", "a\nb").build())
                .hasMessageContaining("header 'trace' value").hasMessageContaining("U+000A");
        assertThatThrownBy(() -> valid().header("bad\u0000name", "v").build())
                .hasMessageContaining("control character U+0000");
        assertThatThrownBy(() -> valid().header("event_id", "x").build()).hasMessageContaining("reserved");
        assertThatThrownBy(() -> valid().header("x", null).build()).hasMessageContaining("null value");
        assertThat(valid().header("traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01").build()
                .headers()).containsKey("traceparent");
    }

    @Test
    void rejects_missing_aggregate_and_event_type_and_nul_in_ids() {
        assertThatThrownBy(() -> OutboxMessage.builder().topic("t").eventType("E").build())
                .hasMessageContaining("aggregateType is missing");
        assertThatThrownBy(() -> valid().eventType("").build()).hasMessageContaining("eventType is missing");
        assertThatThrownBy(() -> valid().aggregate("Order", "a\u0000b").build())
                .hasMessageContaining("aggregateId").hasMessageContaining("U+0000");
        assertThatThrownBy(() -> valid().key("\ud800").build()).hasMessageContaining("surrogate");
        assertThatThrownBy(() -> valid().aggregateVersion(-1).build()).hasMessageContaining("aggregateVersion");
    }

    @Test
    void to_string_never_shows_the_payload() {
        assertThat(valid().jsonPayload("{\"secret\":\"s3cr3t\"}").build().toString()).doesNotContain("s3cr3t");
    }
}
