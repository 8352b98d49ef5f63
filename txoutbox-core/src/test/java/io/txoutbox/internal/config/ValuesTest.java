package io.txoutbox.internal.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.txoutbox.FailurePolicy;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

/** The text forms of setting values: what is accepted, what is refused and how the refusal reads. */
class ValuesTest {

    @ParameterizedTest
    @CsvSource({"500ms, PT0.5S", "250, PT0.25S", "5s, PT5S", " 2m , PT2M", "1h, PT1H", "7d, PT168H", "0, PT0S",
            "10 s, PT10S", "5S, PT5S", "PT5S, PT5S", "pt1m, PT1M", "1500us, PT0.0015S", "2000000ns, PT0.002S"})
    void durations_in_every_documented_form(String text, String expected) {
        assertThat(Values.parseDuration(text)).isEqualTo(Duration.parse(expected));
    }

    @ParameterizedTest
    @ValueSource(strings = {"-1", "-5s", "-PT5S", "PT-5S", "-1d"})
    void negative_durations_are_refused_when_read(String text) {
        assertThatThrownBy(() -> Values.parseDuration(text)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("a negative duration").hasMessageContaining("500ms, 5s");
    }

    @ParameterizedTest
    @ValueSource(strings = {"soon", "5 sec", "1.5s", "5w", "", "s"})
    void unreadable_durations_name_the_accepted_forms(String text) {
        assertThatThrownBy(() -> Values.parseDuration(text)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("500ms, 5s, 2m, 1h, 7d");
    }

    @ParameterizedTest
    @CsvSource({"1048576, 1048576", "0, 0", "512B, 512", "512KB, 524288", "16MB, 16777216", "16mb, 16777216",
            "1GB, 1073741824", "2 gb, 2147483648"})
    void sizes_in_every_documented_form(String text, long expected) {
        assertThat(Values.parseBytes(text)).isEqualTo(expected);
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {"1.5GB|a fraction", "0,5MB|a fraction", "16M|not a size in bytes",
            "16MiB|not a size in bytes", "16 megabytes|not a size in bytes", "-1|a negative size", "1TB|not a size"})
    void other_sizes_are_refused_naming_the_accepted_forms(String text, String why) {
        assertThatThrownBy(() -> Values.parseBytes(text)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith(why).hasMessageContaining("B, KB, MB or GB (powers of 1024)")
                .hasMessageContaining("not 16M or 16MiB");
    }

    @Test
    void a_size_too_large_for_a_long_is_refused() {
        assertThatThrownBy(() -> Values.parseBytes("9223372036854775807GB")).isInstanceOf(ArithmeticException.class);
    }

    @Test
    void formats_are_the_shortest_exact_text_and_read_back() {
        for (Duration d : new Duration[] {Duration.ZERO, Duration.ofMillis(1500), Duration.ofSeconds(90),
                Duration.ofMinutes(2), Duration.ofHours(3), Duration.ofDays(7), Duration.ofNanos(1500)}) {
            assertThat(Values.parseDuration(Values.format(d))).as(Values.format(d)).isEqualTo(d);
        }
        assertThat(Values.format(Duration.ofMillis(1500))).isEqualTo("1500ms");
        assertThat(Values.format(Duration.ofDays(7))).isEqualTo("7d");
        assertThat(Values.format(null)).isEqualTo("null");
        for (long bytes : new long[] {0, 1000, 1024, 16L << 20, 1L << 30, 3L << 30}) {
            assertThat(Values.parseBytes(Values.formatBytes(bytes))).isEqualTo(bytes);
        }
        assertThat(Values.formatBytes(16L << 20)).isEqualTo("16MB");
        assertThat(Values.formatBytes(1_000_000)).isEqualTo("1000000");
    }

    @Test
    void booleans_enums_and_names() {
        assertThat(Values.parseBoolean(" TRUE ")).isTrue();
        assertThat(Values.parseBoolean("false")).isFalse();
        assertThatThrownBy(() -> Values.parseBoolean("yes")).hasMessage("not a boolean: use true or false");
        assertThat(Values.parseEnum(FailurePolicy.class, "dead-letter-and-continue"))
                .isEqualTo(FailurePolicy.DEAD_LETTER_AND_CONTINUE);
        assertThatThrownBy(() -> Values.parseEnum(FailurePolicy.class, "drop"))
                .hasMessageStartingWith("not one of PARK_KEY");
        assertThat(Values.kebab("relay.batchSize")).isEqualTo("relay.batch-size");
        assertThat(Values.kebab("inboxWorker.retry.maxAttempts")).isEqualTo("inbox-worker.retry.max-attempts");
    }
}
