package io.txoutbox.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.Test;

class UuidV7Test {

    @Test
    void has_version_7_the_rfc_variant_and_the_time() {
        long before = System.currentTimeMillis();
        UUID id = UuidV7.next();
        long after = System.currentTimeMillis();
        assertThat(id.version()).isEqualTo(7);
        assertThat(id.variant()).isEqualTo(2);
        assertThat(UuidV7.millisOf(id)).isBetween(before, after + 1);
    }

    @Test
    void ids_of_one_jvm_are_strictly_increasing_even_within_a_millisecond() {
        List<UUID> ids = new ArrayList<>();
        for (int i = 0; i < 10_000; i++) {
            ids.add(UuidV7.at(1_700_000_000_000L)); // same millisecond every time, counter overflows
        }
        for (int i = 1; i < ids.size(); i++) {
            // unsigned comparison of the most significant bits = time then counter
            assertThat(Long.compareUnsigned(ids.get(i).getMostSignificantBits(),
                    ids.get(i - 1).getMostSignificantBits())).isPositive();
        }
    }
}
