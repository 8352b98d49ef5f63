package io.txoutbox.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.UUID;
import org.junit.jupiter.api.Test;

class ShardsTest {

    @Test
    void matches_the_sql_definition_for_known_keys() {
        // values computed by PostgreSQL: select ('x'||lpad(substr(md5(k),1,8),16,'0'))::bit(64)::bigint % 32
        assertThat(Shards.of("k-1", null, 32)).isEqualTo(1);
    }

    @Test
    void spreads_keys_over_all_shards_and_null_keys_by_event_id() {
        int[] counts = new int[32];
        for (int i = 0; i < 32_000; i++) {
            counts[Shards.of("order-" + i, null, 32)]++;
        }
        for (int c : counts) {
            assertThat(c).isBetween(800, 1200);
        }
        UUID a = UuidV7.next();
        assertThat(Shards.of(null, a, 32)).isEqualTo(Shards.of(a.toString(), null, 32));
    }
}
