package io.txoutbox;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Instant;
import java.util.List;
import org.junit.jupiter.api.Test;

class OutboxHealthResultTest {

    private static final Instant AT = Instant.parse("2026-12-02T05:30:00Z");

    @Test
    void a_healthy_result_reads_UP_for_operators() {
        OutboxHealth.Result r = new OutboxHealth.Result(true, List.of(), AT, null);
        assertThat(r.up()).isTrue();
        assertThat(r.isUp()).isTrue();
        assertThat(r).hasToString("UP");
    }

    @Test
    void an_unhealthy_result_reads_DOWN_with_its_reasons() {
        OutboxHealth.Result r = new OutboxHealth.Result(false, List.of("topic orders: too old", "lane 2 stalled"),
                AT, null);
        assertThat(r.isUp()).isFalse();
        assertThat(r).hasToString("DOWN [topic orders: too old, lane 2 stalled]");
    }
}
