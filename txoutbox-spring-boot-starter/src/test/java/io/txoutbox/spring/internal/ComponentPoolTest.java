package io.txoutbox.spring.internal;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import org.junit.jupiter.api.Test;

class ComponentPoolTest {

    @Test
    void the_pool_of_a_component_is_full_from_the_start_and_never_waits_long_for_a_connection() {
        try (HikariDataSource pool = ComponentPool.create("txoutbox-relay", "jdbc:postgresql://127.0.0.1:1/none",
                "u", "p", null, 4)) {
            assertThat(pool.getMaximumPoolSize()).isEqualTo(4);
            assertThat(pool.getMinimumIdle()).as("fixed-size: every lane's connection is opened, none on demand")
                    .isEqualTo(4);
            assertThat(pool.getConnectionTimeout()).isEqualTo(5_000);
            assertThat(pool.getInitializationFailTimeout()).as("a database not up yet does not fail the start")
                    .isNegative();
        }
    }

    @Test
    void the_relays_pool_has_a_session_per_lane_the_membership_the_listen_and_one_for_short_calls() {
        assertThat(ComponentPool.relaySize(2, false)).isEqualTo(4);
        assertThat(ComponentPool.relaySize(2, true)).isEqualTo(5);
        assertThat(ComponentPool.relaySize(1, false)).isEqualTo(3);
    }
}
