package io.txoutbox.example.spring;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * The example's main job, small: on the tests' PostgreSQL (a schema of its own) and an in-process broker, every order
 * is published and paid exactly once, as the summary line says.
 */
class SpringOrdersIT {

    private static final Pattern SUMMARY = Pattern.compile("orders=(\\d+) published=(\\d+) paid=(\\d+) "
            + "duplicates_skipped=(\\d+) lost=(\\d+) p50_ms=(-?\\d+) p99_ms=(-?\\d+)");

    @Test
    void every_order_is_published_and_paid_exactly_once() throws Exception {
        OrderJob.Summary summary = SpringOrdersDemo.run("--orders=100", "--writers=2", "--rate=100");

        Matcher line = SUMMARY.matcher(summary.line());
        assertThat(line.matches()).as("summary line %s", summary.line()).isTrue();
        long orders = Long.parseLong(line.group(1));
        assertThat(orders).isEqualTo(100);
        assertThat(Long.parseLong(line.group(2))).as("published").isEqualTo(orders);
        assertThat(Long.parseLong(line.group(3))).as("paid").isEqualTo(orders);
        assertThat(Long.parseLong(line.group(5))).as("lost").isZero();
        assertThat(Long.parseLong(line.group(6))).as("p50_ms").isNotNegative();
        assertThat(Long.parseLong(line.group(7))).as("p99_ms").isGreaterThanOrEqualTo(Long.parseLong(line.group(6)));
        assertThat(summary.paidTwice()).as("orders paid twice").isZero();
        assertThat(summary.clean()).isTrue();
    }
}
