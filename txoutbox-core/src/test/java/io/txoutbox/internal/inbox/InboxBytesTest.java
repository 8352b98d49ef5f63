package io.txoutbox.internal.inbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.txoutbox.InboxMessage;
import java.nio.charset.StandardCharsets;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.UUID;
import org.junit.jupiter.api.Test;

class InboxBytesTest {

    private static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    @Test
    void text_stays_text_and_anything_else_becomes_hex() {
        assertThat(InboxBytes.textForm(utf8("order-1"))).isEqualTo("order-1");
        assertThat(InboxBytes.textForm(utf8("ключ €"))).isEqualTo("ключ €");
        assertThat(InboxBytes.textForm(new byte[] {0x00, 0x2a})).isEqualTo("\\x002a");
        assertThat(InboxBytes.textForm(new byte[] {'k', (byte) 0x80})).isEqualTo("\\x6b80");
        assertThat(InboxBytes.textForm(new byte[] {(byte) 0xED, (byte) 0xA0, (byte) 0x80})) // an encoded surrogate
                .isEqualTo("\\xeda080");
        assertThat(InboxBytes.textForm(new byte[0])).isEmpty();
        assertThat(InboxBytes.textForm(null)).isNull();
    }

    @Test
    void the_group_form_tells_every_two_different_keys_apart() {
        assertThat(InboxBytes.groupForm(utf8("\\x002a"))).isEqualTo("\\x5c7830303261");
        assertThat(InboxBytes.groupForm(new byte[] {0x00, 0x2a})).isEqualTo("\\x002a");
        Random random = new Random(42);
        Set<String> forms = new HashSet<>();
        Set<String> keys = new HashSet<>();
        for (int i = 0; i < 20_000; i++) {
            byte[] key = new byte[random.nextInt(4)];
            for (int j = 0; j < key.length; j++) { // mostly the bytes that matter: NUL, backslash, x, hex digits, high
                key[j] = (byte) List.of(0x00, 0x5c, 0x78, 0x30, 0x61, 0x80, 0xC3, 0xA9, 0x41).get(random.nextInt(9))
                        .intValue();
            }
            if (keys.add(java.util.HexFormat.of().formatHex(key))) {
                assertThat(forms.add(InboxBytes.groupForm(key))).as("group form of %s is unique",
                        java.util.HexFormat.of().formatHex(key)).isTrue();
            }
        }
    }

    @Test
    void header_bytes_round_trip_with_nul_null_values_and_names() {
        Map<String, byte[]> headers = new LinkedHashMap<>();
        headers.put("a", utf8("text"));
        headers.put("b\u0000", new byte[] {0x00, (byte) 0xFF});
        headers.put("c", null);
        headers.put("d", new byte[0]);
        assertThat(InboxBytes.needsHeaderBytes(headers)).isTrue();
        Map<String, byte[]> back = InboxBytes.decodeHeaders(InboxBytes.encodeHeaders(headers));
        assertThat(back.keySet()).containsExactly("a", "b\u0000", "c", "d");
        assertThat(back.get("b\u0000")).isEqualTo(new byte[] {0x00, (byte) 0xFF});
        assertThat(back.get("c")).isNull();
        assertThat(back.get("d")).isEmpty();
        assertThat(InboxBytes.needsHeaderBytes(Map.of("a", utf8("plain"), "t", utf8("\\x00")))).isFalse();
        assertThatThrownBy(() -> InboxBytes.decodeHeaders(new byte[] {1, 0x7f, 0, 0, 0, 'a'}))
                .hasMessageContaining("damaged");
        assertThatThrownBy(() -> InboxBytes.decodeHeaders(new byte[] {9})).hasMessageContaining("format 9");
    }

    @Test
    void an_inbox_message_takes_either_form_of_the_key() {
        UUID id = UUID.randomUUID();
        InboxMessage bytes = InboxMessage.builder(id).key(new byte[] {0x00, 0x2a}).build();
        assertThat(bytes.key()).isEqualTo("\\x002a");
        assertThat(bytes.keyBytes()).isEqualTo(new byte[] {0x00, 0x2a});
        InboxMessage text = InboxMessage.builder(id).key("order-1").headers(Map.of("h", "v")).build();
        assertThat(text.keyBytes()).isEqualTo(utf8("order-1"));
        assertThat(text.headerBytes().get("h")).isEqualTo(utf8("v"));
        assertThat(InboxMessage.builder(id).key((String) null).build().keyBytes()).isNull();
        assertThatThrownBy(() -> new InboxMessage(id, "other", null, null, null, null, null, null, null, null, null,
                new byte[] {0x00}, null)).hasMessageContaining("inboxMessage.key");
        assertThat(InboxBytes.safeText("a\u0000b")).isEqualTo("\\x610062");
        assertThat(InboxBytes.safeText("plain")).isEqualTo("plain");
    }
}
